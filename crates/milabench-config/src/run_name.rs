//! Run names: `--run-name` as given, or a pronounceable random name, with `{time}` replaced by
//! the local time (`YYYY-MM-DD_HH-MM-SS`), as milabench names its runs (`kofatiru.2024-...`).
//!
//! A run name is the name of one folder under `<base>/runs`, never a path: the Python tool took
//! a name starting with `/`, `.` or `~` as the run folder itself, so `../../x` wrote outside the
//! runs folder, `.` wrote into (and then reported) the current folder, and `~/x` made a literal
//! `~` folder. Names holding a path separator, and `.` and `..`, are refused.

use crate::error::ConfigError;

/// The longest run name, in bytes: a folder name may hold 255 on the common file systems,
/// and files named after the run (its lock, the HTML page's title) add to it.
pub const MAX_RUN_NAME_BYTES: usize = 200;

const CONSONANTS: &[u8] = b"bdfgjklmnprstvz";
const VOWELS: &[u8] = b"aeiou";

/// A random name of four consonant-vowel syllables, such as `kofatiru`.
pub fn random_name(rng: &mut fastrand::Rng) -> String {
    let mut name = String::with_capacity(8);
    for _ in 0..4 {
        name.push(CONSONANTS[rng.usize(..CONSONANTS.len())] as char);
        name.push(VOWELS[rng.usize(..VOWELS.len())] as char);
    }
    name
}

/// Resolves a run name: `None` gives `<random>.{time}`; `{time}` becomes `time`, formatted
/// `YYYY-MM-DD_HH-MM-SS`. Any other `{...}` is an error.
pub fn resolve(
    requested: Option<&str>,
    time: &jiff::civil::DateTime,
    rng: &mut fastrand::Rng,
) -> Result<String, ConfigError> {
    let template = match requested {
        Some(name) => name.to_string(),
        None => format!("{}.{{time}}", random_name(rng)),
    };
    let stamp = time.strftime("%Y-%m-%d_%H-%M-%S").to_string();
    let name = template.replace("{time}", &stamp);
    if let Some(start) = name.find('{') {
        return Err(ConfigError::shape(
            None,
            format!(
                "the run name `{template}` uses `{}`, which is not a known placeholder",
                &name[start
                    ..name[start..]
                        .find('}')
                        .map_or(name.len(), |e| start + e + 1)]
            ),
            "only `{time}` can be used in a run name",
        ));
    }
    if name.is_empty() {
        return Err(ConfigError::shape(
            None,
            "the run name is empty",
            "give a non-empty --run-name",
        ));
    }
    if name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(ConfigError::shape(
            None,
            format!(
                "the run name `{name}` is not a folder name: a run is always written to <base>/runs/<run name>"
            ),
            "give a plain name, without `/` or `\\` and other than `.` and `..`; to write runs elsewhere, choose the base folder with --base",
        ));
    }
    if name.len() > MAX_RUN_NAME_BYTES {
        return Err(ConfigError::shape(
            None,
            format!(
                "the run name is {} bytes long, more than the {MAX_RUN_NAME_BYTES} a run folder's name may take",
                name.len()
            ),
            "give a shorter --run-name",
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ConfigError::shape(
            None,
            format!(
                "the run name {name:?} holds a control character (a line break, a tab...), which would break the lines of reports and `db list`"
            ),
            "give a --run-name of printable characters",
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_time() {
        let time = jiff::civil::date(2024, 3, 5).at(7, 8, 9, 0);
        let mut rng = fastrand::Rng::with_seed(1);
        let name = resolve(None, &time, &mut rng).expect("ok");
        assert!(name.ends_with(".2024-03-05_07-08-09"), "{name}");
        assert_eq!(name.len(), 8 + 1 + 19);
        assert_eq!(
            resolve(Some("x.{time}"), &time, &mut rng).expect("ok"),
            "x.2024-03-05_07-08-09"
        );
        let err = resolve(Some("x.{date}"), &time, &mut rng).expect_err("fails");
        assert!(err.to_string().contains("`{date}`"), "{err}");
    }

    #[test]
    fn paths_are_not_names() {
        let time = jiff::civil::date(2024, 3, 5).at(7, 8, 9, 0);
        let mut rng = fastrand::Rng::with_seed(1);
        for bad in [
            "../../x", ".", "..", "~/x", "/tmp/x", "a/b", "a\\b", "{time}/x",
        ] {
            let err = resolve(Some(bad), &time, &mut rng).expect_err(bad);
            assert!(
                err.to_string().contains("not a folder name"),
                "{bad}: {err}"
            );
        }
        for good in ["~x", ".hidden", "a..b", "nightly.{time}"] {
            resolve(Some(good), &time, &mut rng).expect(good);
        }
    }

    /// Issue 38, item 18: a 300-character run name passed `--dry-run` and then failed with
    /// "File name too long"; a run name with a line break was taken and broke `db list`.
    #[test]
    fn long_names_and_control_characters_are_refused() {
        let time = jiff::civil::date(2024, 3, 5).at(7, 8, 9, 0);
        let mut rng = fastrand::Rng::with_seed(1);
        let err = resolve(Some(&"x".repeat(300)), &time, &mut rng).expect_err("too long");
        assert!(
            err.to_string()
                .contains("the run name is 300 bytes long, more than the 200"),
            "{err}"
        );
        resolve(Some(&"x".repeat(MAX_RUN_NAME_BYTES)), &time, &mut rng).expect("at the bound");
        for bad in ["a\nb", "a\tb", "a\rb"] {
            let err = resolve(Some(bad), &time, &mut rng).expect_err(bad);
            assert!(err.to_string().contains("control character"), "{err}");
        }
    }
}
