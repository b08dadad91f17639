//! Slurm against a real one-node Slurm (`cargo xtask slurm`: munged, slurmctld and slurmd on
//! loopback): the node-list parser against `scontrol show hostnames`, `milabench run` inside an
//! allocation, and `milabench slurm submit` with tiny protocol-speaking benchmarks (no torch).
//!
//! These tests need root (they start Slurm's daemons): they are `#[ignore]`d with that reason,
//! and `cargo xtask ci` runs them (`--run-ignored only`) against one shared harness, or says why
//! it skips them.

use milabench_cluster::slurm::expand_nodelist;
use xtask::slurm::TestSlurm;

/// Our expansion of many node lists is Slurm's own (`scontrol show hostnames`), and the lists
/// Slurm refuses we refuse.
#[test]
#[ignore = "needs root and a Slurm: cargo xtask ci runs it"]
fn node_lists_expand_as_scontrol_expands_them() {
    let slurm = TestSlurm::get();
    let forms = [
        "cn01",
        "cn[01-04,07]",
        "a[1-2],b3",
        "rack[1-2]-n[01-02]",
        "x[1-2]y[3-4]z[5-6]",
        "a[1-2]b[01-02]c[7,9]d[1-3]",
        "cn[08-11]",
        "cn[9-11]",
        "cn[009-11]",
        "cn[1-010]",
        "cn0[1-2]",
        "a-b[1-2],c",
        "cn[1-2],,cn3",
        "gpu[001-003,010-012],cpu[1-2]",
        "n[0-0]",
        "cn[5-3]",
        "cn[]",
        "cn[a]",
        "cn[1-3]-ib",
    ];
    for form in forms {
        let out = slurm
            .command("scontrol")
            .args(["show", "hostnames", form])
            .output()
            .expect("scontrol runs");
        // scontrol refuses a list with a message and no names (its exit status stays 0).
        let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(String::from)
            .collect();
        let refused = theirs.is_empty() || theirs.iter().any(|l| l.contains("Invalid hostlist"));
        let theirs = (!refused).then_some(theirs);
        let ours = expand_nodelist(form).ok();
        assert_eq!(
            ours,
            theirs,
            "{form}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
