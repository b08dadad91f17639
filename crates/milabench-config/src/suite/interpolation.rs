//! Stage 5, interpolation: `${...}` references resolved over `{system, multirun, packs}`.

use crate::error::ConfigError;
use crate::interpolate;
use crate::value::{Map, Node, Value};

use super::SuiteRequest;

/// Resolves every `${...}` of the finalised `packs` and of the system of `request`; returns the
/// resolved `system` mapping and the resolved packs.
pub(super) fn interpolate_packs(
    request: &SuiteRequest<'_>,
    packs: Map,
) -> Result<(Node, Map), ConfigError> {
    let mut root = Map::default();
    root.insert("system".into(), request.system.tree.clone());
    if let Some(multirun) = &request.system.multirun {
        // Readable by `${multirun...}` as in the Python tool; its runs are `sweep`'s.
        root.insert("multirun".into(), multirun.clone());
    }
    root.insert("packs".into(), Node::new(Value::Map(packs)));
    let mut root = Node::new(Value::Map(root));
    interpolate::resolve_all(&mut root, request.env)?;
    let Value::Map(mut root) = root.value else {
        unreachable!("root is a mapping")
    };
    let system = root.shift_remove("system").unwrap_or_else(Node::empty_map);
    let Some(Node {
        value: Value::Map(packs),
        ..
    }) = root.shift_remove("packs")
    else {
        unreachable!("packs is a mapping")
    };
    Ok((system, packs))
}
