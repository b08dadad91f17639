use super::*;
use proptest::prelude::*;
use serde_json::json;

fn system() -> serde_json::Value {
    json!({
        "arch": "cuda",
        "gpu": {"count": 8, "capacity": "81920 MiB"},
        "nodes": [
            {"name": "a", "ip": "10.0.0.1", "main": true},
            {"name": "b", "ip": "10.0.0.2", "main": false}
        ],
        "options": {"sizer": {"auto": 1}},
        "self": null
    })
}

fn ev(src: &str) -> Value {
    let sys = system();
    evaluate(src, &JsonScope(&sys)).unwrap_or_else(|e| panic!("{e}"))
}

fn s(src: &str) -> String {
    ev(src).to_python_string()
}

fn err(src: &str) -> ExprError {
    let sys = system();
    evaluate(src, &JsonScope(&sys)).unwrap_err()
}

#[test]
fn arithmetic_is_python_like() {
    assert_eq!(s("8 * 10"), "80");
    assert_eq!(s("8 / 2"), "4.0");
    assert_eq!(s("7 / 2"), "3.5");
    assert_eq!(s("7 // 2"), "3");
    assert_eq!(s("-7 // 2"), "-4");
    assert_eq!(s("-7 % 3"), "2");
    assert_eq!(s("7 % -3"), "-2");
    assert_eq!(s("-7.5 % 2"), "0.5");
    assert_eq!(s("7.0 // 2"), "3.0");
    assert_eq!(s("2 ** 10"), "1024");
    assert_eq!(s("2 ** -1"), "0.5");
    assert_eq!(s("-2 ** 2"), "-4");
    assert_eq!(s("2 ** 3 ** 2"), "512");
    assert_eq!(s("(1 + 2) * 3"), "9");
    assert_eq!(s("1 + 2 * 3 - 4"), "3");
    assert_eq!(s("1.5 + 1"), "2.5");
    assert_eq!(s("1e24"), "1e+24");
    assert_eq!(s("0.5e-5"), "5e-06");
    assert_eq!(s(".5"), "0.5");
    assert_eq!(s("1_000"), "1000");
    assert_eq!(s("True + 1"), "2");
    assert_eq!(s("'a' + 'b'"), "ab");
}

#[test]
fn comparisons_and_logic() {
    assert_eq!(ev("gpu['count'] > 1"), Value::Bool(true));
    assert_eq!(ev("len(nodes) >= 2"), Value::Bool(true));
    assert_eq!(ev("len(nodes) >= 3"), Value::Bool(false));
    assert_eq!(ev("arch == 'cuda'"), Value::Bool(true));
    assert_eq!(ev("arch != \"cuda\""), Value::Bool(false));
    assert_eq!(ev("arch in ['cuda', 'rocm']"), Value::Bool(true));
    assert_eq!(ev("'xpu' not in ['cuda', 'rocm']"), Value::Bool(true));
    assert_eq!(ev("'count' in gpu"), Value::Bool(true));
    assert_eq!(
        ev("not arch == 'cpu' and gpu['count'] >= 8"),
        Value::Bool(true)
    );
    assert_eq!(ev("arch == 'cpu' or len(nodes) == 2"), Value::Bool(true));
    assert_eq!(ev("1 < 2 < 3"), Value::Bool(true));
    assert_eq!(ev("1 < 3 < 2"), Value::Bool(false));
    assert_eq!(ev("1 == 1.0"), Value::Bool(true));
    assert_eq!(ev("self == None"), Value::Bool(true));
    assert_eq!(ev("0 or 5"), Value::Int(5));
    assert_eq!(ev("0 and undefined_name"), Value::Int(0));
}

#[test]
fn subscripts() {
    assert_eq!(s("nodes[0]['ip']"), "10.0.0.1");
    assert_eq!(s("nodes[-1]['name']"), "b");
    assert_eq!(s("options['sizer']['auto']"), "1");
    assert_eq!(s("gpu['capacity']"), "81920 MiB");
    assert_eq!(s("'abc'[1]"), "b");
    assert_eq!(s("[1, 2, 3,][2]"), "3");
}

#[test]
fn builtins() {
    assert_eq!(s("max(1, 5, 3)"), "5");
    assert_eq!(s("min([4, 2])"), "2");
    assert_eq!(s("int(3.9)"), "3");
    assert_eq!(s("int('42')"), "42");
    assert_eq!(s("float(2)"), "2.0");
    assert_eq!(s("abs(-3)"), "3");
    assert_eq!(s("len('abc')"), "3");
}

#[test]
fn syntax_errors_point_at_the_column() {
    let e = err("gpu['count'] >> 1");
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert_eq!(e.column, 15);
    let text = e.to_string();
    assert!(text.contains("gpu['count'] >> 1"), "{text}");
    assert!(text.contains("              ^"), "{text}");

    let e = err("gpu.count > 1");
    assert_eq!(e.column, 4);
    assert!(e.message.contains("gpu['count']"), "{}", e.message);

    assert_eq!(err("a = 1").column, 3);
    assert!(err("a = 1").message.contains("=="));
    assert!(
        err("__import__('os').system('ls')")
            .message
            .contains("attribute access")
    );
    assert!(err("(len)(nodes)").message.contains("only named"));
    assert!(err("nodes[0](1)").message.contains("only named"));
    assert!(err("(1 + 2").message.contains("`)`"));
    assert!(err("'abc").message.contains("unterminated"));
    assert!(err("1 2").message.contains("after a complete expression"));
    assert!(err("").message.contains("end of expression"));
    assert!(err("lambda x").message.contains("keyword"));
    assert!(err("nodes[0:1]").message.contains("slices"));
    assert!(err("99999999999999999999").message.contains("64 bits"));
    assert!(err("1abc").message.contains("invalid number"));
    assert_eq!(err("é + $").column, 1);
    assert_eq!(err("'é' + $").column, 7);
}

#[test]
fn evaluation_errors() {
    let e = err("gpuu['count'] > 1");
    assert_eq!(e.kind, ErrorKind::Evaluation);
    assert_eq!(e.column, 1);
    assert!(e.message.contains("unknown name `gpuu`"), "{}", e.message);
    assert!(
        e.message.contains("arch, gpu, nodes, options, self"),
        "{}",
        e.message
    );

    let e = err("gpu['cnt']");
    assert!(
        e.message
            .contains("key 'cnt' not found; keys: count, capacity"),
        "{}",
        e.message
    );
    assert_eq!(e.column, 5);
    assert!(err("nodes[5]").message.contains("out of range"));
    assert!(err("gpu[0]").message.contains("quote the key"));
    assert!(err("1 / 0").message.contains("division by zero"));
    assert!(err("1 // 0").message.contains("division by zero"));
    assert!(err("1 % 0.0").message.contains("division by zero"));
    assert!(err("2 ** 64").message.contains("overflow"));
    assert!(err("9223372036854775807 + 1").message.contains("overflow"));
    assert!(err("'a' * 3").message.contains("unsupported operand"));
    assert!(err("'a' < 1").message.contains("cannot order"));
    assert!(err("len(1)").message.contains("len()"));
    let e = err("exec('x')");
    assert!(
        e.message.contains("unknown function `exec`"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("abs, float, int, len, max, min"),
        "{}",
        e.message
    );
}

#[test]
fn nesting_is_bounded() {
    let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
    assert!(err(&deep).message.contains("nested too deeply"));
    let nots = format!("{}True", "not ".repeat(500));
    assert!(err(&nots).message.contains("nested too deeply"));
    let chain = vec!["1"; 500].join(" + ");
    assert!(err(&chain).message.contains("nested too deeply"));
    let ok = format!("{}1{}", "(".repeat(30), ")".repeat(30));
    assert_eq!(s(&ok), "1");
}

#[test]
fn python_float_repr() {
    assert_eq!(python_float(80.0), "80.0");
    assert_eq!(python_float(0.1), "0.1");
    assert_eq!(python_float(1e16), "1e+16");
    assert_eq!(python_float(1.5e-7), "1.5e-07");
    assert_eq!(python_float(-0.0), "-0.0");
    assert_eq!(python_float(f64::INFINITY), "inf");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn never_panics_on_arbitrary_text(src in "\\PC{0,80}") {
        let sys = system();
        let _ = evaluate(&src, &JsonScope(&sys));
    }

    #[test]
    fn never_panics_on_grammar_like_text(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("gpu"), Just("nodes"), Just("["), Just("]"), Just("("), Just(")"),
                Just("'count'"), Just("0"), Just("-1"), Just("2.5"), Just("**"), Just("//"),
                Just("%"), Just("/"), Just("*"), Just("+"), Just("-"), Just("<"), Just(">="),
                Just("=="), Just("and"), Just("or"), Just("not"), Just("in"), Just("len"),
                Just("max"), Just(","), Just("9223372036854775807"), Just("'a'"), Just("True"),
                Just("None"), Just("1e308"),
            ],
            0..40,
        )
    ) {
        let src = parts.join(" ");
        let sys = system();
        if let Err(e) = evaluate(&src, &JsonScope(&sys)) {
            prop_assert!(e.column >= 1 && e.column <= src.chars().count() + 1);
        }
    }
}
