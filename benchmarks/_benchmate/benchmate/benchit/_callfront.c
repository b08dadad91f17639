/* The hot path of model discovery in C (see discovery.py and native.py).
 *
 * A CallFront stands in torch.nn.Module's class dictionary as __call__. It settles the two kinds
 * of calls that make up nearly all of a script's module calls, and hands every other call,
 * untouched, to discovery's Python wrapper:
 *
 *   - a call nested deeper than max_depth goes straight to torch's own call path;
 *   - a top-level call whose inputs are all positional tensors is counted and timed on its site,
 *     as the Python wrapper does: a site known for the module and its inputs' shapes and dtypes,
 *     else the one discovery's _resolve finds or makes (the front asks it directly, with the
 *     input signature it built). The front remembers the last site it counted: a call on it
 *     again (the loop of a script) is recognised without building a key, and is counted in the
 *     front, which adds those counts to the site's counters when it moves to another site and
 *     when discovery calls flush() (as it uninstalls, before anything reads the counts; a call in
 *     progress then is counted on its site as it returns). A description made in between loses
 *     nothing: the counts go to the site's current counter, its invocation.
 *
 * Attribute access on the class (Module.__call__) and on instances (module.__call__) sees the
 * Python wrapper, so tracers that inspect __call__ (torch.compile's dynamo) find a Python function
 * as before; only the interpreter's call slot reaches the front.
 *
 * An InitFront stands as Module.__init__: it runs torch's own __init__, then records where in the
 * script the module was made (the first frame of the script that is not one of the module's own
 * constructors), as discovery's Python __init__ wrapper does. A script builds every layer of its
 * models through it, so the walk and the record cost a few C calls instead of a Python function
 * and a WeakKeyDictionary entry each. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <time.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *wrapper;      /* discovery's Python __call__: the reference behaviour */
    PyObject *stack;        /* list: the tracked calls in progress */
    PyObject *sites;        /* dict: (None, id(module), signature) -> site */
    PyObject *tensor_type;  /* torch.Tensor */
    PyObject *is_compiling; /* torch.compiler.is_compiling */
    PyObject *flags;        /* torch.compiler's globals when is_compiling() only reads its flag
                             * there, else None */
    PyObject *clock;        /* time.perf_counter */
    PyObject *discovery;    /* the Discovery: _describe_at, describe_found() */
    Py_ssize_t max_depth;
    /* The last top-level site the front counted, so the next call on it needs no key: the site,
     * its module's weak reference, its input signature, and the calls counted there that its
     * counters do not hold yet (flush() adds them). */
    PyObject *last_site;
    PyObject *last_module;
    PyObject *last_signature;
    long pending_executed;
    double pending_seconds;
    /* Set by flush(), as discovery uninstalls the front (a new one is installed after). */
    int retired;
} CallFront;

static PyObject *s_compiled_call_impl, *s_call_impl, *s_shape, *s_dtype, *s_module, *s_counts,
    *s_executed, *s_seconds, *s_describe_at, *s_describe_found, *s_is_compiling_flag, *s_init,
    *s_resolve, *s_blocked, *s_listener, *s_first_call_done, *s_first_call_failed, *s_parameters,
    *s_modules, *s_numel;

/* What torch's Module.__call__ does: the compiled call when torch.compile set one, else
 * _call_impl. args[0] is the module. */
static PyObject *
call_module(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *compiled = PyObject_GetAttr(args[0], s_compiled_call_impl);
    if (compiled == NULL) {
        return NULL;
    }
    PyObject *outputs;
    if (compiled == Py_None) {
        Py_DECREF(compiled);
        outputs = PyObject_VectorcallMethod(s_call_impl, args, (size_t)nargs, kwnames);
    }
    else {
        outputs = PyObject_Vectorcall(compiled, args + 1, (size_t)(nargs - 1), kwnames);
        Py_DECREF(compiled);
    }
    return outputs;
}

/* callable() converted to a double by read, or -1.0 with an exception set. */
static double
call_reading(PyObject *callable, double (*read)(PyObject *))
{
    PyObject *value = PyObject_CallNoArgs(callable);
    if (value == NULL) {
        return -1.0;
    }
    double answer = read(value);
    Py_DECREF(value);
    return answer;
}

/* A truth test as call_reading's read: 1.0, 0.0, or -1.0 with an exception set. */
static double
truth(PyObject *value)
{
    return (double)PyObject_IsTrue(value);
}

/* perf_counter() as a double, or -1.0 with an exception set. On Linux, perf_counter is
 * CLOCK_MONOTONIC, read here without a call into Python. */
static double
now(CallFront *self)
{
#ifdef __linux__
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0) {
        return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    }
#endif
    return call_reading(self->clock, PyFloat_AsDouble);
}

/* Whether torch is compiling or exporting (1), not (0), or an exception was set (-1). */
static int
is_compiling(CallFront *self)
{
    if (self->flags != Py_None) {
        PyObject *flag = PyDict_GetItemWithError(self->flags, s_is_compiling_flag);
        if (flag != NULL) {
            return PyObject_IsTrue(flag);
        }
        if (PyErr_Occurred()) {
            return -1;
        }
    }
    return (int)call_reading(self->is_compiling, truth);
}

/* Whether ref is a weak reference to target (1), not (0), or an exception was set (-1). */
static int
refers_to(PyObject *ref, PyObject *target)
{
    if (!PyWeakref_CheckRef(ref)) {
        return 0;
    }
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *referent;
    if (PyWeakref_GetRef(ref, &referent) < 0) {
        return -1;
    }
    Py_XDECREF(referent);
    return referent == target;
#else
    return PyWeakref_GET_OBJECT(ref) == target;
#endif
}

/* The input signature (shape, dtype, shape, dtype...) of a call whose inputs are all tensors, as
 * discovery's _signature makes it, else NULL with no exception set (the Python wrapper decides),
 * or NULL with an exception set. */
static PyObject *
input_signature(CallFront *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *signature = PyTuple_New(2 * (nargs - 1));
    if (signature == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 1; i < nargs; i++) {
        PyObject *value = args[i];
        if (!PyObject_TypeCheck(value, (PyTypeObject *)self->tensor_type)) {
            Py_DECREF(signature);
            return NULL;
        }
        PyObject *shape = PyObject_GetAttr(value, s_shape);
        PyObject *dtype = shape == NULL ? NULL : PyObject_GetAttr(value, s_dtype);
        if (dtype == NULL) {
            Py_XDECREF(shape);
            Py_DECREF(signature);
            PyErr_Clear();
            return NULL;
        }
        PyTuple_SET_ITEM(signature, 2 * (i - 1), shape);
        PyTuple_SET_ITEM(signature, 2 * (i - 1) + 1, dtype);
    }
    return signature;
}

/* counts.executed += executed; counts.seconds += seconds, on the site's current counter. */
static int
count(PyObject *site, long executed, double seconds)
{
    PyObject *counts = PyObject_GetAttr(site, s_counts);
    if (counts == NULL) {
        return -1;
    }
    int status = -1;
    PyObject *calls = PyObject_GetAttr(counts, s_executed);
    PyObject *spent = PyObject_GetAttr(counts, s_seconds);
    if (calls != NULL && spent != NULL) {
        PyObject *added_calls = PyLong_FromLong(executed);
        PyObject *more = added_calls == NULL ? NULL : PyNumber_Add(calls, added_calls);
        PyObject *added_time = PyFloat_FromDouble(seconds);
        PyObject *longer = added_time == NULL ? NULL : PyNumber_Add(spent, added_time);
        if (more != NULL && longer != NULL && PyObject_SetAttr(counts, s_executed, more) == 0
            && PyObject_SetAttr(counts, s_seconds, longer) == 0) {
            status = 0;
        }
        Py_XDECREF(added_calls);
        Py_XDECREF(more);
        Py_XDECREF(added_time);
        Py_XDECREF(longer);
    }
    Py_XDECREF(calls);
    Py_XDECREF(spent);
    Py_DECREF(counts);
    return status;
}

/* Add the calls counted on the last site to its counters. */
static int
flush_counts(CallFront *self)
{
    if (self->pending_executed == 0 || self->last_site == NULL) {
        return 0;
    }
    long executed = self->pending_executed;
    double seconds = self->pending_seconds;
    self->pending_executed = 0;
    self->pending_seconds = 0.0;
    return count(self->last_site, executed, seconds);
}

/* Make site, called with this signature, the last site; a retired front (flushed, so no longer
 * installed, while a call it took is still running) remembers nothing and counts every call on
 * its site directly. */
static int
remember(CallFront *self, PyObject *site, PyObject *signature)
{
    if (self->retired) {
        return 0;
    }
    if (flush_counts(self) < 0) {
        return -1;
    }
    PyObject *module_ref = PyObject_GetAttr(site, s_module);
    if (module_ref == NULL) {
        return -1;
    }
    Py_XSETREF(self->last_site, Py_NewRef(site));
    Py_XSETREF(self->last_module, module_ref);
    Py_XSETREF(self->last_signature, Py_NewRef(signature));
    return 0;
}

/* The site registered for a top-level call of module with this signature (a new reference), or
 * NULL: with an exception set, or none when there is no such site. */
static PyObject *
registered_site(CallFront *self, PyObject *module, PyObject *signature)
{
    PyObject *id = PyLong_FromVoidPtr(module);
    PyObject *key = id == NULL ? NULL : PyTuple_Pack(3, Py_None, id, signature);
    Py_XDECREF(id);
    if (key == NULL) {
        return NULL;
    }
    PyObject *site = PyDict_GetItemWithError(self->sites, key);
    Py_DECREF(key);
    if (site == NULL) {
        return NULL;
    }
    Py_INCREF(site);
    /* The key holds the module's id: the site is this module's only while its weak reference
     * still points to it. */
    PyObject *module_ref = PyObject_GetAttr(site, s_module);
    int mine = module_ref == NULL ? -1 : refers_to(module_ref, module);
    Py_XDECREF(module_ref);
    if (mine != 1) {
        Py_CLEAR(site);
    }
    return site;
}

/* The last site when a top-level call of module with this signature is on it (a new reference),
 * or NULL: with an exception set, or none when it is not. */
static PyObject *
last_site_of(CallFront *self, PyObject *module, PyObject *signature)
{
    if (self->last_site == NULL) {
        return NULL;
    }
    int same = refers_to(self->last_module, module);
    if (same == 1) {
        same = PyObject_RichCompareBool(signature, self->last_signature, Py_EQ);
    }
    return same == 1 ? Py_NewRef(self->last_site) : NULL;
}

/* Drop the last entry of the stack (the call that just returned or raised). */
static void
pop(CallFront *self)
{
    Py_ssize_t size = PyList_GET_SIZE(self->stack);
    if (size > 0) {
        PyList_SetSlice(self->stack, size - 1, size, NULL);
    }
}

/* Add one call of site, which took seconds: to the calls the front holds when site is the last
 * site, else (a new site on a retired front, or the front was flushed during the forward) to the
 * site's counter. */
static int
count_call(CallFront *self, PyObject *site, double seconds)
{
    if (site != self->last_site) {
        return count(site, 1, seconds);
    }
    self->pending_executed++;
    self->pending_seconds += seconds;
    return 0;
}

/* Tell the listener about the first call of an invocation that asked for it: method is
 * first_call_done or first_call_failed. An exception set before (the forward's) is kept unless
 * the listener raises its own. */
static int
tell_listener(CallFront *self, PyObject *method, PyObject *call)
{
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *listener = PyObject_GetAttr(self->discovery, s_listener);
    PyObject *done = listener == NULL ? NULL
                                      : PyObject_CallMethodOneArg(listener, method, call);
    Py_XDECREF(listener);
    if (done == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return -1;
    }
    Py_DECREF(done);
    PyErr_Restore(type, value, traceback);
    return 0;
}

/* Describe what was found when it is due (discovery's _describe_at has passed at end). */
static int
describe_when_due(CallFront *self, double end)
{
    PyObject *due = PyObject_GetAttr(self->discovery, s_describe_at);
    double describe_at = due == NULL ? -1.0 : PyFloat_AsDouble(due);
    Py_XDECREF(due);
    if (PyErr_Occurred()) {
        return -1;
    }
    if (end < describe_at) {
        return 0;
    }
    PyObject *done = PyObject_CallMethodNoArgs(self->discovery, s_describe_found);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* A tracked top-level call on site, as the Python wrapper makes it: on the stack while the
 * forward runs, timed and counted. call is the first call's Call the listener asked for (it hears
 * how the forward ended), or None. */
static PyObject *
call_tracked(CallFront *self, PyObject *site, PyObject *const *args, Py_ssize_t nargs,
             PyObject *call)
{
    if (PyList_Append(self->stack, site) < 0) {
        return NULL;
    }
    double start = now(self);
    if (start < 0) {
        pop(self);
        return NULL;
    }
    PyObject *outputs = call_module(args, nargs, NULL);
    if (outputs == NULL) {
        pop(self);
        if (call != Py_None) {
            tell_listener(self, s_first_call_failed, call);
        }
        return NULL;
    }
    double end = now(self);
    int status = end < 0 ? -1 : count_call(self, site, end - start);
    pop(self);
    if (status == 0) {
        status = call != Py_None ? tell_listener(self, s_first_call_done, call)
                                 : describe_when_due(self, end);
    }
    if (status < 0) {
        Py_DECREF(outputs);
        return NULL;
    }
    return outputs;
}

/* A top-level call on no known site: discovery's _resolve(module, args, kwargs, signature,
 * caller) finds or makes its site, then the call is tracked there; without a site it runs
 * untracked (discovery's _blocked). */
static PyObject *
call_resolved(CallFront *self, PyObject *const *args, Py_ssize_t nargs, PyObject *signature)
{
    PyObject *inputs = PyTuple_New(nargs - 1);
    PyObject *keywords = inputs == NULL ? NULL : PyDict_New();
    if (keywords == NULL) {
        Py_XDECREF(inputs);
        return NULL;
    }
    for (Py_ssize_t i = 1; i < nargs; i++) {
        PyTuple_SET_ITEM(inputs, i - 1, Py_NewRef(args[i]));
    }
    PyObject *caller = (PyObject *)PyEval_GetFrame();
    PyObject *resolved = PyObject_CallMethodObjArgs(self->discovery, s_resolve, args[0], inputs,
                                                    keywords, signature,
                                                    caller == NULL ? Py_None : caller, NULL);
    PyObject *outputs = NULL;
    if (resolved != NULL && (!PyTuple_Check(resolved) || PyTuple_GET_SIZE(resolved) != 2)) {
        PyErr_SetString(PyExc_TypeError, "discovery's _resolve must return (site, call)");
    }
    else if (resolved != NULL) {
        PyObject *site = PyTuple_GET_ITEM(resolved, 0);
        if (site == Py_None) {
            outputs = PyObject_CallMethodObjArgs(self->discovery, s_blocked, args[0], inputs,
                                                 keywords, NULL);
        }
        else if (remember(self, site, signature) == 0) {
            outputs = call_tracked(self, site, args, nargs, PyTuple_GET_ITEM(resolved, 1));
        }
    }
    Py_XDECREF(resolved);
    Py_DECREF(inputs);
    Py_DECREF(keywords);
    return outputs;
}

/* A top-level call whose inputs are all positional tensors, with this signature: on the last
 * site (no key needed), on a registered site, or on one discovery resolves. */
static PyObject *
call_top_level(CallFront *self, PyObject *const *args, Py_ssize_t nargs, PyObject *signature)
{
    PyObject *site = last_site_of(self, args[0], signature);
    if (site == NULL && !PyErr_Occurred()) {
        site = registered_site(self, args[0], signature);
        if (site != NULL && remember(self, site, signature) < 0) {
            Py_CLEAR(site);
        }
    }
    if (site == NULL) {
        return PyErr_Occurred() ? NULL : call_resolved(self, args, nargs, signature);
    }
    PyObject *outputs = call_tracked(self, site, args, nargs, Py_None);
    Py_DECREF(site);
    return outputs;
}

static PyObject *
front_vectorcall(CallFront *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs >= 1) {
        Py_ssize_t depth = PyList_GET_SIZE(self->stack);
        if (depth > self->max_depth) {
            return call_module(args, nargs, kwnames);
        }
        if (depth == 0 && kwnames == NULL) {
            int compiling = is_compiling(self);
            if (compiling < 0) {
                return NULL;
            }
            PyObject *signature = compiling ? NULL : input_signature(self, args, nargs);
            if (signature != NULL) {
                PyObject *outputs = call_top_level(self, args, nargs, signature);
                Py_DECREF(signature);
                return outputs;
            }
            if (PyErr_Occurred()) {
                return NULL;
            }
        }
    }
    return PyObject_Vectorcall(self->wrapper, args, nargsf, kwnames);
}

static PyObject *
front_flush(CallFront *self, PyObject *Py_UNUSED(ignored))
{
    int status = flush_counts(self);
    self->retired = 1;
    Py_CLEAR(self->last_site);
    Py_CLEAR(self->last_module);
    Py_CLEAR(self->last_signature);
    if (status < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef front_methods[] = {
    {"flush", (PyCFunction)front_flush, METH_NOARGS,
     "Add the calls the front counted and holds to their site's counters, and forget the last "
     "site; discovery calls it as it uninstalls the front."},
    {NULL, NULL, 0, NULL},
};

/* Module.__call__ and module.__call__ see the Python wrapper (plain or bound). */
static PyObject *
front_get(CallFront *self, PyObject *instance, PyObject *Py_UNUSED(owner))
{
    if (instance == NULL || instance == Py_None) {
        Py_INCREF(self->wrapper);
        return self->wrapper;
    }
    return PyMethod_New(self->wrapper, instance);
}

/* The garbage collector's slots of a type whose object fields OBJECTS(X) lists:
 * PREFIX_traverse, PREFIX_clear and PREFIX_dealloc. */
#define GC_SLOTS(PREFIX, TYPE, OBJECTS)                                                        \
    static int PREFIX##_traverse(TYPE *self, visitproc visit, void *arg)                       \
    {                                                                                          \
        OBJECTS(GC_VISIT_FIELD)                                                                \
        return 0;                                                                              \
    }                                                                                          \
    static int PREFIX##_clear(TYPE *self)                                                      \
    {                                                                                          \
        OBJECTS(GC_CLEAR_FIELD)                                                                \
        return 0;                                                                              \
    }                                                                                          \
    static void PREFIX##_dealloc(TYPE *self)                                                   \
    {                                                                                          \
        PyObject_GC_UnTrack(self);                                                             \
        PREFIX##_clear(self);                                                                  \
        Py_TYPE(self)->tp_free((PyObject *)self);                                              \
    }
#define GC_VISIT_FIELD(field) Py_VISIT(self->field);
#define GC_CLEAR_FIELD(field) Py_CLEAR(self->field);

/* The object fields of a CallFront: those its constructor takes, and all of them for the garbage
 * collector's two walks. */
#define CALLFRONT_ARGUMENTS(X)                                                                 \
    X(wrapper) X(stack) X(sites) X(tensor_type) X(is_compiling) X(flags) X(clock) X(discovery)
#define CALLFRONT_OBJECTS(X) CALLFRONT_ARGUMENTS(X) X(last_site) X(last_module) X(last_signature)

GC_SLOTS(front, CallFront, CALLFRONT_OBJECTS)

static PyObject *
front_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"wrapper", "stack", "sites", "max_depth", "tensor_type",
                            "is_compiling", "flags", "clock", "discovery", NULL};
    PyObject *wrapper, *stack, *sites, *tensor_type, *is_compiling, *flags, *clock, *discovery;
    Py_ssize_t max_depth;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!nO!OOOO:CallFront", names, &wrapper,
                                     &PyList_Type, &stack, &PyDict_Type, &sites, &max_depth,
                                     &PyType_Type, &tensor_type, &is_compiling, &flags, &clock,
                                     &discovery)) {
        return NULL;
    }
    if (flags != Py_None && !PyDict_Check(flags)) {
        PyErr_SetString(PyExc_TypeError, "CallFront: flags must be a dict or None");
        return NULL;
    }
    CallFront *self = (CallFront *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = (vectorcallfunc)front_vectorcall;
    self->max_depth = max_depth;
#define KEEP_FIELD(field) self->field = Py_NewRef(field);
    CALLFRONT_ARGUMENTS(KEEP_FIELD)
#undef KEEP_FIELD
    return (PyObject *)self;
}

static PyTypeObject CallFrontType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "benchmate.benchit._callfront.CallFront",
    .tp_doc = "torch.nn.Module.__call__ during discovery: the hot path in C, the rest in Python.",
    .tp_basicsize = sizeof(CallFront),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = front_new,
    .tp_dealloc = (destructor)front_dealloc,
    .tp_traverse = (traverseproc)front_traverse,
    .tp_clear = (inquiry)front_clear,
    .tp_vectorcall_offset = offsetof(CallFront, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = (descrgetfunc)front_get,
    .tp_methods = front_methods,
};

/* -- InitFront: Module.__init__ ------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *original;  /* torch's own Module.__init__ */
    PyObject *script;    /* str: the script's path, as its code objects name their file */
    PyObject *locations; /* dict: id(module) -> (weak reference to the module, (script, line)) */
} InitFront;

/* Whether two strings are equal (the script's path and a code object's file name). */
static int
same_text(PyObject *one, PyObject *other)
{
    return one == other || (PyUnicode_GET_LENGTH(one) == PyUnicode_GET_LENGTH(other)
                            && PyUnicode_Compare(one, other) == 0);
}

/* Whether code is the __init__ of a class in module's MRO (a frame of the module's own
 * construction). Classes written in Python are heap types; the others have no such code. */
static int
is_constructor_of(PyObject *module, PyCodeObject *code)
{
    PyObject *mro = Py_TYPE(module)->tp_mro;
    Py_ssize_t size = mro == NULL ? 0 : PyTuple_GET_SIZE(mro);
    for (Py_ssize_t i = 0; i < size; i++) {
        PyTypeObject *klass = (PyTypeObject *)PyTuple_GET_ITEM(mro, i);
        if (!(klass->tp_flags & Py_TPFLAGS_HEAPTYPE) || klass->tp_dict == NULL) {
            continue;
        }
        PyObject *init = PyDict_GetItemWithError(klass->tp_dict, s_init);
        if (init == NULL && PyErr_Occurred()) {
            return -1;
        }
        if (init != NULL && PyFunction_Check(init)
            && PyFunction_GET_CODE(init) == (PyObject *)code) {
            return 1;
        }
    }
    return 0;
}

/* Whether a frame running code is where the script made module (1), not (0), or an exception was
 * set (-1): the script's own code, outside the module's constructors. */
static int
is_making_site(InitFront *self, PyObject *module, PyCodeObject *code)
{
    if (!same_text(code->co_filename, self->script)) {
        return 0;
    }
    if (!same_text(code->co_name, s_init)) {
        return 1;
    }
    int constructor = is_constructor_of(module, code);
    return constructor < 0 ? -1 : !constructor;
}

/* The callback of a weak reference made by dropping_when_dead: its module died, so the entry
 * filed under its key goes. bound is (entries, key). */
static PyObject *
drop_entry(PyObject *bound, PyObject *Py_UNUSED(ref))
{
    PyObject *entries = PyTuple_GET_ITEM(bound, 0);
    PyObject *key = PyTuple_GET_ITEM(bound, 1);
    if (PyDict_DelItem(entries, key) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
            return NULL;
        }
        PyErr_Clear();
    }
    Py_RETURN_NONE;
}

static PyMethodDef drop_entry_def = {"drop_entry", (PyCFunction)drop_entry, METH_O,
                                     "Remove the entry of a module that died."};

/* A weak reference to module whose death removes entries[key], a key that holds the module's id
 * (discovery's _dropping_when_dead: whatever is filed there is the module's own, since no other
 * object has its id while it lives and the callback runs before the id can be reused). */
static PyObject *
weak_entry_ref(PyObject *entries, PyObject *key, PyObject *module)
{
    PyObject *bound = PyTuple_Pack(2, entries, key);
    PyObject *drop = bound == NULL ? NULL : PyCFunction_New(&drop_entry_def, bound);
    Py_XDECREF(bound);
    PyObject *ref = drop == NULL ? NULL : PyWeakref_NewRef(module, drop);
    Py_XDECREF(drop);
    return ref;
}

/* File (script, line) as module's location, under its id, until it dies. */
static int
file_location(InitFront *self, PyObject *module, int line)
{
    int status = -1;
    PyObject *key = PyLong_FromVoidPtr(module);
    PyObject *ref = key == NULL ? NULL : weak_entry_ref(self->locations, key, module);
    PyObject *entry = ref == NULL ? NULL : Py_BuildValue("(O(Oi))", ref, self->script, line);
    if (entry != NULL && PyDict_SetItem(self->locations, key, entry) == 0) {
        status = 0;
    }
    Py_XDECREF(entry);
    Py_XDECREF(ref);
    Py_XDECREF(key);
    return status;
}

/* Walk from the frame that made module outwards to the first frame where the script made it, and
 * file that line; nothing is filed when the script is not on the stack. */
static int
remember_location(InitFront *self, PyObject *module)
{
    PyFrameObject *frame = PyEval_GetFrame();
    Py_XINCREF(frame);
    int status = 0;
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        int found = is_making_site(self, module, code);
        Py_DECREF(code);
        if (found != 0) {
            status = found < 0 ? -1 : file_location(self, module, PyFrame_GetLineNumber(frame));
            Py_DECREF(frame);
            return status;
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    return status;
}

static PyObject *
init_vectorcall(InitFront *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *done = PyObject_Vectorcall(self->original, args, nargsf, kwnames);
    if (done == NULL || PyVectorcall_NARGS(nargsf) < 1) {
        return done;
    }
    if (remember_location(self, args[0]) < 0) {
        Py_DECREF(done);
        return NULL;
    }
    return done;
}

/* Module.__init__ is the front itself, so explicit calls (torch.nn.Module.__init__(self)) reach
 * it; an instance's __init__ (super().__init__) is the front bound to the instance. */
static PyObject *
init_get(InitFront *self, PyObject *instance, PyObject *Py_UNUSED(owner))
{
    if (instance == NULL || instance == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New((PyObject *)self, instance);
}

/* What introspection asks of Module.__init__ (inspect.signature follows __wrapped__): the
 * original's answers. */
static PyObject *
init_wrapped(InitFront *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->original);
}

static PyObject *
init_forwarded(InitFront *self, void *name)
{
    return PyObject_GetAttrString(self->original, (const char *)name);
}

static PyGetSetDef init_getset[] = {
    {"__wrapped__", (getter)init_wrapped, NULL, "torch's own Module.__init__, which the front runs",
     NULL},
    {"__name__", (getter)init_forwarded, NULL, NULL, "__name__"},
    {"__qualname__", (getter)init_forwarded, NULL, NULL, "__qualname__"},
    {"__module__", (getter)init_forwarded, NULL, NULL, "__module__"},
    {"__doc__", (getter)init_forwarded, NULL, NULL, "__doc__"},
    {NULL, NULL, NULL, NULL, NULL},
};

#define INITFRONT_OBJECTS(X) X(original) X(script) X(locations)

GC_SLOTS(init, InitFront, INITFRONT_OBJECTS)

static PyObject *
init_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"original", "script", "locations", NULL};
    PyObject *original, *script, *locations;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OUO!:InitFront", names, &original, &script,
                                     &PyDict_Type, &locations)) {
        return NULL;
    }
    InitFront *self = (InitFront *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = (vectorcallfunc)init_vectorcall;
#define KEEP_FIELD(field) self->field = Py_NewRef(field);
    INITFRONT_OBJECTS(KEEP_FIELD)
#undef KEEP_FIELD
    return (PyObject *)self;
}

static PyTypeObject InitFrontType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "benchmate.benchit._callfront.InitFront",
    .tp_doc = "torch.nn.Module.__init__ during discovery: torch's __init__, then the module's "
              "location in the script.",
    .tp_basicsize = sizeof(InitFront),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = init_new,
    .tp_dealloc = (destructor)init_dealloc,
    .tp_traverse = (traverseproc)init_traverse,
    .tp_clear = (inquiry)init_clear,
    .tp_vectorcall_offset = offsetof(InitFront, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = (descrgetfunc)init_get,
    .tp_getset = init_getset,
};

/* -- functions of discovery's first calls ----------------------------------------------------- */

static PyObject *
dropping_when_dead(PyObject *Py_UNUSED(unused), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "dropping_when_dead takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "dropping_when_dead: entries must be a dict");
        return NULL;
    }
    return weak_entry_ref(args[0], args[1], args[2]);
}

/* Whether one of a module's own parameters has elements (1), none does (0), or an exception was
 * set (-1); lazy parameters (instances of lazy_type), not made yet, have none. */
static int
has_own_parameters(PyObject *module, PyObject *lazy_type)
{
    PyObject *parameters = PyObject_GetAttr(module, s_parameters);
    if (parameters == NULL) {
        return -1;
    }
    int found = 0;
    PyObject *values = PyMapping_Values(parameters);
    Py_DECREF(parameters);
    if (values == NULL) {
        return -1;
    }
    for (Py_ssize_t i = 0; found == 0 && i < PyList_GET_SIZE(values); i++) {
        PyObject *parameter = PyList_GET_ITEM(values, i);
        if (parameter == Py_None) {
            continue;
        }
        int lazy = PyObject_IsInstance(parameter, lazy_type);
        if (lazy != 0) {
            found = lazy < 0 ? -1 : 0;
            continue;
        }
        PyObject *elements = PyObject_CallMethodNoArgs(parameter, s_numel);
        found = elements == NULL ? -1 : PyObject_IsTrue(elements);
        Py_XDECREF(elements);
    }
    Py_DECREF(values);
    return found;
}

static PyObject *
has_parameters(PyObject *Py_UNUSED(unused), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "has_parameters takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *pending = PyList_New(1);
    if (pending == NULL) {
        return NULL;
    }
    PyList_SET_ITEM(pending, 0, Py_NewRef(args[1]));
    int found = 0;
    /* Modules in the order they come (each followed by its children): a model's first layers
     * usually hold parameters. */
    for (Py_ssize_t next = 0; found == 0 && next < PyList_GET_SIZE(pending); next++) {
        PyObject *current = PyList_GET_ITEM(pending, next);
        if (current == Py_None) { /* a child slot set to None */
            continue;
        }
        found = has_own_parameters(current, args[0]);
        if (found != 0) {
            break;
        }
        PyObject *children = PyObject_GetAttr(current, s_modules);
        PyObject *values = children == NULL ? NULL : PyMapping_Values(children);
        Py_XDECREF(children);
        Py_ssize_t size = PyList_GET_SIZE(pending);
        if (values == NULL || PyList_SetSlice(pending, size, size, values) < 0) {
            found = -1;
        }
        Py_XDECREF(values);
    }
    Py_DECREF(pending);
    if (found < 0) {
        return NULL;
    }
    return PyBool_FromLong(found);
}

static PyMethodDef module_functions[] = {
    {"dropping_when_dead", (PyCFunction)(void (*)(void))dropping_when_dead, METH_FASTCALL,
     "dropping_when_dead(entries, key, module): a weak reference to module whose death removes "
     "entries[key] (discovery's _dropping_when_dead)."},
    {"has_parameters", (PyCFunction)(void (*)(void))has_parameters, METH_FASTCALL,
     "has_parameters(lazy_type, module): whether module or a module under it has a parameter "
     "with elements, lazy ones (lazy_type) not made yet counting as none (discovery's "
     "_has_parameters)."},
    {NULL, NULL, 0, NULL},
};

/* -- the module ------------------------------------------------------------------------------ */

static struct PyModuleDef callfront_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_callfront",
    .m_doc = "The C hot path of benchmate's model discovery.",
    .m_size = -1,
    .m_methods = module_functions,
};

PyMODINIT_FUNC
PyInit__callfront(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } strings[] = {
        {&s_compiled_call_impl, "_compiled_call_impl"},
        {&s_call_impl, "_call_impl"},
        {&s_shape, "shape"},
        {&s_dtype, "dtype"},
        {&s_module, "module"},
        {&s_counts, "counts"},
        {&s_executed, "executed"},
        {&s_seconds, "seconds"},
        {&s_describe_at, "_describe_at"},
        {&s_describe_found, "describe_found"},
        {&s_is_compiling_flag, "_is_compiling_flag"},
        {&s_init, "__init__"},
        {&s_resolve, "_resolve"},
        {&s_blocked, "_blocked"},
        {&s_listener, "listener"},
        {&s_first_call_done, "first_call_done"},
        {&s_first_call_failed, "first_call_failed"},
        {&s_parameters, "_parameters"},
        {&s_modules, "_modules"},
        {&s_numel, "numel"},
    };
    for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
        *strings[i].slot = PyUnicode_InternFromString(strings[i].text);
        if (*strings[i].slot == NULL) {
            return NULL;
        }
    }
    PyObject *module = PyModule_Create(&callfront_module);
    if (module == NULL) {
        return NULL;
    }
    struct {
        PyTypeObject *type;
        const char *name;
    } types[] = {{&CallFrontType, "CallFront"}, {&InitFrontType, "InitFront"}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (PyType_Ready(types[i].type) < 0) {
            Py_DECREF(module);
            return NULL;
        }
        Py_INCREF(types[i].type);
        if (PyModule_AddObject(module, types[i].name, (PyObject *)types[i].type) < 0) {
            Py_DECREF(types[i].type);
            Py_DECREF(module);
            return NULL;
        }
    }
    return module;
}
