use super::*;

fn env(pairs: &[(&str, &str)]) -> EnvVars {
    EnvVars::from_pairs(pairs.iter().copied())
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> Utf8PathBuf {
    let path = Utf8PathBuf::from_path_buf(dir.path().join(name)).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn defaults() {
    let s = Settings::load(&SettingsFlags::default(), &EnvVars::default()).unwrap();
    assert_eq!(s, Settings::default());
    assert_eq!(s.base.as_str(), DEFAULT_BASE);
    assert_eq!(s.installer, Installer::Uv);
    assert!(!s.noterm);
}

#[test]
fn layers_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        &dir,
        "settings.yaml",
        "base: /from/file\nconfig: file.yaml\nsystem: sys.yaml\narch: rocm\ninstaller: pip\ndirs:\n  data: /datasets\n",
    );
    let flags = SettingsFlags {
        settings: Some(file),
        config: Some("flag.yaml".into()),
        ..Default::default()
    };
    let e = env(&[
        ("MILABENCH_CONFIG", "env.yaml"),
        ("MILABENCH_GPU_ARCH", "CUDA"),
        ("MILABENCH_DIRS_CACHE", "/cache"),
    ]);
    let s = Settings::load(&flags, &e).unwrap();
    assert_eq!(s.base.as_str(), "/from/file"); // file beats default
    assert_eq!(s.system.as_deref().map(Utf8Path::as_str), Some("sys.yaml"));
    assert_eq!(s.arch, Some(Arch::Cuda)); // env beats file
    assert_eq!(s.config.as_deref().map(Utf8Path::as_str), Some("flag.yaml")); // flag beats env
    assert_eq!(s.installer, Installer::Pip);
    assert_eq!(
        s.dirs.data.as_deref().map(Utf8Path::as_str),
        Some("/datasets")
    );
    assert_eq!(
        s.dirs.cache.as_deref().map(Utf8Path::as_str),
        Some("/cache")
    );

    // Provenance is available through the figment.
    let fig = Settings::figment(&flags, &e).unwrap();
    assert_eq!(
        fig.find_metadata("config").unwrap().name,
        "command-line flag"
    );
    assert_eq!(
        fig.find_metadata("arch").unwrap().name,
        "environment variable"
    );
}

#[test]
fn settings_file_from_env_variable() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "s.yaml", "run_name: nightly\nnoterm: true\n");
    let s = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_SETTINGS", file.as_str())]),
    )
    .unwrap();
    assert_eq!(s.run_name.as_deref(), Some("nightly"));
    assert!(s.noterm);
}

/// Issue 38, item 18: `MILABENCH_SETTINGS=/dev/null` was said not to exist. It is read (no
/// settings); a folder is named as one.
#[test]
fn dev_null_is_no_settings_and_a_folder_is_named() {
    let flags = |path: &str| SettingsFlags {
        settings: Some(path.into()),
        ..Default::default()
    };
    let none = Settings::load(&flags("/dev/null"), &EnvVars::default()).unwrap();
    assert_eq!(
        none.base,
        Settings::load(&SettingsFlags::default(), &EnvVars::default())
            .unwrap()
            .base
    );
    let err = Settings::load(&flags("/tmp"), &EnvVars::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("settings file /tmp (given by --settings) is a folder, not a file"),
        "{err}"
    );
}

#[test]
fn missing_settings_file_is_an_error() {
    let flags = SettingsFlags {
        settings: Some("/nonexistent/settings.yaml".into()),
        ..Default::default()
    };
    let err = Settings::load(&flags, &EnvVars::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SettingsError::MissingFile { .. }));
    assert!(
        msg.contains("/nonexistent/settings.yaml") && msg.contains("--settings"),
        "{msg}"
    );

    let err = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_SETTINGS", "/nope.yaml")]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("MILABENCH_SETTINGS"), "{err}");
}

#[test]
fn file_errors_name_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(&dir, "bad.yaml", "arch: quantum\n");
    let flags = SettingsFlags {
        settings: Some(file),
        ..Default::default()
    };
    let msg = Settings::load(&flags, &EnvVars::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("bad.yaml") && msg.contains("arch"), "{msg}");

    let file = write(&dir, "typo.yaml", "bsae: /x\n");
    let flags = SettingsFlags {
        settings: Some(file),
        ..Default::default()
    };
    let msg = Settings::load(&flags, &EnvVars::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("bsae") && msg.contains("typo.yaml"), "{msg}");

    let file = write(&dir, "syntax.yaml", "base: [unclosed\n");
    let flags = SettingsFlags {
        settings: Some(file),
        ..Default::default()
    };
    let msg = Settings::load(&flags, &EnvVars::default())
        .unwrap_err()
        .to_string();
    assert!(msg.contains("syntax.yaml"), "{msg}");
}

#[test]
fn strict_booleans() {
    for (text, want) in [
        ("1", true),
        ("TRUE", true),
        ("yes", true),
        ("On", true),
        ("0", false),
        ("false", false),
        ("NO", false),
        ("off", false),
    ] {
        let s = Settings::load(
            &SettingsFlags::default(),
            &env(&[("MILABENCH_NOTERM", text)]),
        )
        .unwrap();
        assert_eq!(s.noterm, want, "{text}");
    }
    let err = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_NOTERM", "2")]),
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("MILABENCH_NOTERM") && msg.contains("0, false, no, off"),
        "{msg}"
    );
}

#[test]
fn empty_env_value_is_unset() {
    let s = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_BASE", ""), ("MILABENCH_NOTERM", "")]),
    )
    .unwrap();
    assert_eq!(s.base.as_str(), DEFAULT_BASE);
}

#[test]
fn results_database_comes_from_env_then_flag_and_files_are_made_absolute() {
    let from_env = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_DB", "postgres://u@h/db")]),
    )
    .unwrap();
    assert_eq!(from_env.db.as_deref(), Some("postgres://u@h/db"));
    let flags = SettingsFlags {
        db: Some("mine.db".into()),
        ..SettingsFlags::default()
    };
    let from_flag = Settings::load(&flags, &env(&[("MILABENCH_DB", "postgres://u@h/db")]))
        .unwrap()
        .absolutize(Utf8Path::new("/work"));
    assert_eq!(from_flag.db.as_deref(), Some("/work/mine.db"));
    let url = from_env.absolutize(Utf8Path::new("/work"));
    assert_eq!(url.db.as_deref(), Some("postgres://u@h/db"));
}

#[test]
fn an_arch_without_a_driver_is_accepted_from_the_environment_as_a_name() {
    let s = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_GPU_ARCH", "mock")]),
    )
    .expect("the Python tool's tests use it");
    assert_eq!(s.arch.as_ref().map(Arch::as_str), Some("mock"));
    assert_eq!(
        Arch::parse("mock"),
        None,
        "files and --arch keep to the families"
    );
    assert_eq!(Arch::parse_any("cuda"), Some(Arch::Cuda));
    assert_eq!(ArchName::new("a-very-long-name-beyond-24-bytes"), None);
}

#[test]
fn bad_env_enums_name_the_variable() {
    let err = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_GPU_ARCH", "TPU v5!")]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("MILABENCH_GPU_ARCH"), "{err}");
    assert!(err.to_string().contains("cuda, rocm"), "{err}");
    let err = Settings::load(
        &SettingsFlags::default(),
        &env(&[("MILABENCH_INSTALLER", "conda")]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("MILABENCH_INSTALLER"), "{err}");
}

#[test]
fn flags_override_everything() {
    let flags = SettingsFlags {
        base: Some("/flag/base".into()),
        arch: Some(Arch::Xpu),
        installer: Some(Installer::Pip),
        noterm: Some(false),
        run_name: Some("r".into()),
        python: Some("python3.12".into()),
        ..Default::default()
    };
    let e = env(&[
        ("MILABENCH_BASE", "/env/base"),
        ("MILABENCH_GPU_ARCH", "cpu"),
        ("MILABENCH_INSTALLER", "uv"),
        ("MILABENCH_NOTERM", "1"),
    ]);
    let s = Settings::load(&flags, &e).unwrap();
    assert_eq!(s.base.as_str(), "/flag/base");
    assert_eq!(s.arch, Some(Arch::Xpu));
    assert_eq!(s.installer, Installer::Pip);
    assert!(!s.noterm);
    assert_eq!(s.run_name.as_deref(), Some("r"));
}

#[test]
fn absolutize_and_layout() {
    let flags = SettingsFlags {
        config: Some("../suites/a.yaml".into()),
        python: Some("python3".into()),
        ..Default::default()
    };
    let e = env(&[
        ("MILABENCH_DIRS_DATA", "data2"),
        ("MILABENCH_DIRS_VENV", "/venvs"),
    ]);
    let s = Settings::load(&flags, &e)
        .unwrap()
        .absolutize(Utf8Path::new("/home/me/src"));
    assert_eq!(s.base.as_str(), "/home/me/src/workdir");
    assert_eq!(
        s.config.as_deref().unwrap().as_str(),
        "/home/me/suites/a.yaml"
    );
    assert_eq!(s.python.as_deref().unwrap().as_str(), "python3");
    let l = s.layout();
    assert_eq!(l.venv.as_str(), "/venvs");
    assert_eq!(l.data.as_str(), "/home/me/src/data2");
    assert_eq!(l.cache.as_str(), "/home/me/src/workdir/cache");
    assert_eq!(l.runs.as_str(), "/home/me/src/workdir/runs");
    assert_eq!(l.extra.as_str(), "/home/me/src/workdir/extra");
    assert_eq!(l.logs.as_str(), "/home/me/src/workdir/logs");
    assert_eq!(l.tools.as_str(), "/home/me/src/workdir/tools");
}

#[test]
fn absolute_folds_dots() {
    assert_eq!(
        absolute(Utf8Path::new("/a/b"), Utf8Path::new("./c/../d")).as_str(),
        "/a/b/d"
    );
    assert_eq!(
        absolute(Utf8Path::new("/a"), Utf8Path::new("/x/./y")).as_str(),
        "/x/y"
    );
}

#[test]
fn the_container_image_comes_from_the_variable_and_the_flag_beats_it() {
    let e = env(&[("MILABENCH_CONTAINER", "from/env:1")]);
    let s = Settings::load(&SettingsFlags::default(), &e).unwrap();
    assert_eq!(s.container.as_deref(), Some("from/env:1"));
    let flags = SettingsFlags {
        container: Some("from/flag:2".into()),
        ..Default::default()
    };
    let s = Settings::load(&flags, &e).unwrap();
    assert_eq!(s.container.as_deref(), Some("from/flag:2"));
}
