//! The exact command lines of the four runtimes, pinned.

use super::*;
use crate::launch::{SrunTarget, SshTarget};
use milabench_config::ContainerMount;

fn spec(runtime: ContainerRuntime) -> ContainerSpec {
    ContainerSpec {
        runtime,
        executable: runtime.default_executable().into(),
        image: "registry.example/milabench:cuda".into(),
        archive: None,
        base: None,
        mounts: vec![ContainerMount {
            host: "/models".into(),
            container: Some("/m".into()),
            options: Some("ro".into()),
        }],
        env: IndexMap::from([("HF_HUB_OFFLINE".to_string(), "1".to_string())]),
        global_args: Vec::new(),
        args: Vec::new(),
        gpus: GpuPassing::All,
    }
}

fn folders() -> Vec<Utf8PathBuf> {
    ["/b/data", "/b/cache", "/b/runs", "/b/extra", "/code/bench"]
        .map(Utf8PathBuf::from)
        .into()
}

fn env() -> IndexMap<String, String> {
    IndexMap::from([
        ("MILABENCH_BASE".to_string(), "/b".to_string()),
        ("CUDA_VISIBLE_DEVICES".to_string(), "1".to_string()),
    ])
}

fn command(
    spec: &ContainerSpec,
    map: &PathMap,
    devices: &[String],
    node: Option<&str>,
) -> Vec<String> {
    let env = env();
    let folders = folders();
    let image = runnable_image(spec, "/b/cache".into());
    container_command(
        spec,
        map,
        ContainerCall {
            name: "milabench-run1-bench.D1",
            cwd: "/code/bench".into(),
            env: &env,
            argv: vec!["/b/venv/torch/bin/voir".into(), "main.py".into()],
            folders: &folders,
            devices,
            arch: "cuda",
            visibility: Some(("CUDA_VISIBLE_DEVICES", "0,1".into())),
            image: &image,
            node,
        },
    )
}

fn same() -> PathMap {
    PathMap::new("/b".into(), "/b".into())
}

#[test]
fn podman_runs_a_named_container_with_the_folders_the_env_and_the_gpus() {
    let mut podman = spec(ContainerRuntime::Podman);
    podman.global_args = vec![
        "--runtime".into(),
        "runc".into(),
        "--cgroup-manager=cgroupfs".into(),
    ];
    podman.args = vec!["--ulimit".into(), "nofile=1024:1024".into()];
    assert_eq!(
        command(&podman, &same(), &["1".into()], None).join(" "),
        "podman --runtime runc --cgroup-manager=cgroupfs run --rm --name milabench-run1-bench.D1 \
         --network=host --ipc=host --security-opt=label=disable --workdir=/code/bench \
         --volume /b/data:/b/data --volume /b/cache:/b/cache --volume /b/runs:/b/runs \
         --volume /b/extra:/b/extra --volume /code/bench:/code/bench --volume /models:/m:ro \
         --env MILABENCH_BASE=/b --env CUDA_VISIBLE_DEVICES=1 --env DATA_FD=1 \
         --env HF_HUB_OFFLINE=1 --device nvidia.com/gpu=all --ulimit nofile=1024:1024 \
         registry.example/milabench:cuda /b/venv/torch/bin/voir main.py"
    );
}

#[test]
fn docker_with_its_own_gpus_per_process_and_the_image_base_mapped() {
    let mut docker = spec(ContainerRuntime::Docker);
    docker.gpus = GpuPassing::Process;
    docker.args = vec!["--network".into(), "host".into()];
    let map = PathMap::new("/b".into(), "/milabench/base".into());
    assert_eq!(
        command(&docker, &map, &["1".into()], None).join(" "),
        "docker run --rm --name milabench-run1-bench.D1 --ipc=host --security-opt=label=disable \
         --workdir=/code/bench --volume /b/data:/milabench/base/data \
         --volume /b/cache:/milabench/base/cache --volume /b/runs:/milabench/base/runs \
         --volume /b/extra:/milabench/base/extra --volume /code/bench:/code/bench \
         --volume /models:/m:ro --env MILABENCH_BASE=/milabench/base \
         --env CUDA_VISIBLE_DEVICES=0 --env DATA_FD=1 --env HF_HUB_OFFLINE=1 \
         --device nvidia.com/gpu=1 --network host registry.example/milabench:cuda \
         /milabench/base/venv/torch/bin/voir main.py",
        "the user's `--network host` replaces ours; paths under the base move to the image's"
    );
}

#[test]
fn apptainer_runs_the_converted_sif_with_nv_and_binds() {
    assert_eq!(
        command(
            &spec(ContainerRuntime::Apptainer),
            &same(),
            &["1".into()],
            None
        )
        .join(" "),
        "apptainer exec --nv --pwd=/code/bench --bind /b/data:/b/data --bind /b/cache:/b/cache \
         --bind /b/runs:/b/runs --bind /b/extra:/b/extra --bind /code/bench:/code/bench \
         --bind /models:/m:ro /b/cache/containers/registry.example_milabench_cuda.sif env \
         MILABENCH_BASE=/b CUDA_VISIBLE_DEVICES=1 DATA_FD=1 HF_HUB_OFFLINE=1 \
         /b/venv/torch/bin/voir main.py"
    );
}

#[test]
fn pyxis_is_one_srun_with_the_container_options() {
    assert_eq!(
        command(
            &spec(ContainerRuntime::Pyxis),
            &same(),
            &["1".into()],
            Some("cn07")
        )
        .join(" "),
        "srun --nodes=1 --ntasks=1 --nodelist=cn07 --overlap --kill-on-bad-exit=1 --export=ALL \
         --container-image=/b/cache/containers/registry.example_milabench_cuda.sqsh \
         --container-mounts=/b/data:/b/data,/b/cache:/b/cache,/b/runs:/b/runs,/b/extra:/b/extra,/code/bench:/code/bench,/models:/m:ro \
         --container-workdir=/code/bench env MILABENCH_BASE=/b CUDA_VISIBLE_DEVICES=1 DATA_FD=1 \
         HF_HUB_OFFLINE=1 /b/venv/torch/bin/voir main.py"
    );
}

#[test]
fn a_process_seeing_every_gpu_gets_the_visibility_variable() {
    let mut env = env();
    env.shift_remove("CUDA_VISIBLE_DEVICES");
    let podman = spec(ContainerRuntime::Podman);
    let folders = folders();
    let argv = container_command(
        &podman,
        &same(),
        ContainerCall {
            name: "n",
            cwd: "/code".into(),
            env: &env,
            argv: vec!["x".into()],
            folders: &folders,
            devices: &[],
            arch: "cuda",
            visibility: Some(("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b".into())),
            image: "i",
            node: None,
        },
    );
    assert!(
        argv.contains(&"CUDA_VISIBLE_DEVICES=GPU-a,GPU-b".to_string()),
        "{argv:?}"
    );
}

#[test]
fn paths_move_only_at_a_boundary() {
    let map = PathMap::new("/b".into(), "/img".into());
    assert_eq!(map.apply("/b"), "/img");
    assert_eq!(map.apply("--data=/b/data"), "--data=/img/data");
    assert_eq!(map.apply("/bin/sh /b2/x"), "/bin/sh /b2/x");
    assert_eq!(
        map.apply(r#"{"base":"/b","dirs":{"data":"/b/data"}}"#),
        r#"{"base":"/img","dirs":{"data":"/img/data"}}"#
    );
}

#[test]
fn the_stop_command_reaches_the_node_without_the_rank_supervisor() {
    let mut podman = spec(ContainerRuntime::Podman);
    podman.global_args = vec!["--runtime".into(), "runc".into()];
    assert_eq!(
        stop_command(&podman, "c1", &Launch::Local, "/code".into()),
        Some(
            [
                "podman",
                "--runtime",
                "runc",
                "rm",
                "--force",
                "--time=0",
                "c1"
            ]
            .map(String::from)
            .into()
        )
    );
    let ssh = Launch::Ssh(SshTarget {
        node: "n1".into(),
        user: "me".into(),
        host: "10.0.0.2".into(),
        port: 22,
        key: None,
    });
    let over_ssh = stop_command(&podman, "c1", &ssh, "/code".into()).expect("podman");
    assert_eq!(
        over_ssh[over_ssh.len() - 8..],
        [
            "me@10.0.0.2",
            "podman",
            "--runtime",
            "runc",
            "rm",
            "--force",
            "--time=0",
            "c1"
        ]
    );
    let srun = Launch::Srun(SrunTarget { node: "cn1".into() });
    let over_srun =
        stop_command(&spec(ContainerRuntime::Docker), "c1", &srun, "/code".into()).expect("docker");
    assert_eq!(over_srun[0], "srun");
    assert_eq!(
        over_srun[over_srun.len() - 3..],
        [
            "sh",
            "-c",
            "docker rm --force c1 >/dev/null 2>&1; i=0; while [ $i -lt 50 ] && docker container inspect c1 >/dev/null 2>&1; do sleep 0.2; i=$((i+1)); done"
        ],
        "docker waits until its own removal is over"
    );
    assert_eq!(
        stop_command(
            &spec(ContainerRuntime::Apptainer),
            "c1",
            &Launch::Local,
            "/".into()
        ),
        None
    );
    assert_eq!(
        stop_command(&spec(ContainerRuntime::Pyxis), "c1", &srun, "/".into()),
        None
    );
}

#[test]
fn images_are_made_ready_once_per_node_by_one_command() {
    let cache = Utf8Path::new("/b/cache");
    let podman = spec(ContainerRuntime::Podman);
    assert_eq!(
        image_setup_command(&podman, cache).expect("pull").join(" "),
        "sh -c podman image inspect registry.example/milabench:cuda >/dev/null 2>&1 || podman pull registry.example/milabench:cuda"
    );
    let mut loaded = spec(ContainerRuntime::Docker);
    loaded.archive = Some("/images/m.tar".into());
    assert_eq!(
        image_setup_command(&loaded, cache).expect("load").join(" "),
        "docker load --input /images/m.tar"
    );
    assert_eq!(
        image_setup_command(&spec(ContainerRuntime::Apptainer), cache)
            .expect("build")
            .join(" "),
        "sh -c test -e /b/cache/containers/registry.example_milabench_cuda.sif || { mkdir -p /b/cache/containers && apptainer build /b/cache/containers/registry.example_milabench_cuda.sif docker://registry.example/milabench:cuda; }"
    );
    let mut archive = spec(ContainerRuntime::Apptainer);
    archive.image = "/images/m.tar".into();
    assert!(
        image_setup_command(&archive, cache).expect("build")[2]
            .contains("docker-archive:/images/m.tar")
    );
    let mut sif = spec(ContainerRuntime::Apptainer);
    sif.image = "/images/m.sif".into();
    assert_eq!(
        image_setup_command(&sif, cache),
        None,
        "a .sif runs as it is"
    );
    assert_eq!(
        image_setup_command(&spec(ContainerRuntime::Pyxis), cache)
            .expect("import")
            .join(" "),
        "sh -c test -e /b/cache/containers/registry.example_milabench_cuda.sqsh || { mkdir -p /b/cache/containers && enroot import --output /b/cache/containers/registry.example_milabench_cuda.sqsh 'docker://registry.example#milabench:cuda'; }"
    );
    assert_eq!(enroot_source("ubuntu:24.04"), "docker://ubuntu:24.04");
}

#[test]
fn a_node_gets_its_folders_then_its_image() {
    let folders: Vec<Utf8PathBuf> = vec!["/b/data".into(), "/b/my runs".into()];
    assert_eq!(
        node_setup_command(&spec(ContainerRuntime::Podman), "/b/cache".into(), &folders),
        [
            "sh",
            "-c",
            "mkdir -p /b/data '/b/my runs' && exec \"$@\"",
            "sh",
            "sh",
            "-c",
            "podman image inspect registry.example/milabench:cuda >/dev/null 2>&1 || podman pull registry.example/milabench:cuda",
        ]
    );
    let mut sif = spec(ContainerRuntime::Apptainer);
    sif.image = "/i.sif".into();
    assert_eq!(
        node_setup_command(&sif, "/b/cache".into(), &folders),
        ["sh", "-c", "mkdir -p /b/data '/b/my runs'"]
    );
}

#[test]
fn container_names_are_deterministic_and_safe() {
    assert_eq!(
        container_name("nightly.2026-11-28_09:00", "resnet.R1.D0"),
        "milabench-nightly.2026-11-28_09_00-resnet.R1.D0"
    );
}
