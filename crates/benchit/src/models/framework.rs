//! Which frameworks' models a script's worker discovers: PyTorch always, Keras when the script
//! imports TensorFlow or Keras (a cheap scan of its import lines) or `--framework keras` says
//! so. Keras needs TensorFlow, which only the Keras environment has (see `crate::env`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::input::{Input, InputKind};

/// The `--framework` choice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    /// Keras too for the scripts that import `tensorflow` or `keras`, PyTorch only for the others.
    #[default]
    Auto,
    /// PyTorch models only: TensorFlow is never installed.
    Pytorch,
    /// Keras models too, for every script (TensorFlow is installed when missing).
    Keras,
}

impl Framework {
    /// The name used on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Framework::Auto => "auto",
            Framework::Pytorch => "pytorch",
            Framework::Keras => "keras",
        }
    }

    /// Whether the worker of `input` discovers Keras models: never for an ONNX file; for a
    /// script, as the choice says (`auto`: when [`imports_keras`] finds an import of it; a script
    /// that cannot be read is left to the worker, which reports it).
    pub fn discovers_keras(self, input: &Input) -> bool {
        if input.kind != InputKind::Script {
            return false;
        }
        match self {
            Framework::Pytorch => false,
            Framework::Keras => true,
            Framework::Auto => input.script.imports_keras,
        }
    }

    /// Why the Keras environment is needed for `inputs`, for the person waiting on its install:
    /// the first script that imports TensorFlow or Keras, or `--framework keras`; `None` when no
    /// input needs it.
    pub fn keras_reason(self, inputs: &[Input]) -> Option<String> {
        let input = inputs.iter().find(|input| self.discovers_keras(input))?;
        Some(match self {
            Framework::Keras => "--framework keras".to_string(),
            _ => format!("{} imports TensorFlow or Keras", input.arg),
        })
    }
}

impl fmt::Display for Framework {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Top-level packages whose import means the script uses Keras models.
const KERAS_PACKAGES: [&str; 3] = ["tensorflow", "keras", "tf_keras"];

/// Whether Python `source` has a statement `import tensorflow`, `import keras` (or `tf_keras`,
/// submodules, `as` names, several names) or `from tensorflow... import`/`from keras... import`,
/// at any indentation and after `;`. A line scan, not a parser: such a line inside a string
/// counts too (at worst TensorFlow is installed for nothing); relative imports never count.
pub fn imports_keras(source: &str) -> bool {
    source
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(|line| line.split(';'))
        .any(|statement| imported_modules(statement.trim()).any(is_keras_module))
}

/// The modules an `import` or `from ... import` statement names (nothing for other statements).
fn imported_modules(statement: &str) -> Box<dyn Iterator<Item = &str> + '_> {
    if let Some(names) = statement.strip_prefix("import ") {
        // `import a.b as c, d`: each comma-separated item's first word.
        Box::new(
            names
                .split(',')
                .filter_map(|item| item.split_whitespace().next()),
        )
    } else if let Some(rest) = statement.strip_prefix("from ") {
        Box::new(rest.split_whitespace().next().into_iter())
    } else {
        Box::new(std::iter::empty())
    }
}

/// Whether `module` (`tensorflow.keras.layers`) is in one of [`KERAS_PACKAGES`].
fn is_keras_module(module: &str) -> bool {
    let top = module.split('.').next().unwrap_or("");
    KERAS_PACKAGES.contains(&top)
}

#[cfg(test)]
mod tests {
    use super::*;
    use camino::Utf8Path;

    #[test]
    fn imports_of_tensorflow_and_keras_are_found() {
        for source in [
            "import tensorflow as tf\n",
            "import keras\n",
            "import numpy as np, tensorflow\n",
            "from tensorflow import keras\n",
            "from tensorflow.keras.layers import Dense\n",
            "from keras import layers\n",
            "def main():\n    import keras.ops as ops\n",
            "import os; import tensorflow as tf\n",
            "import tf_keras\n",
            "import torch\nfrom keras.models import Sequential  # the model\n",
        ] {
            assert!(imports_keras(source), "{source:?}");
        }
    }

    #[test]
    fn other_imports_and_mentions_are_not() {
        for source in [
            "import torch\nimport torch.nn as nn\n",
            "# import tensorflow\n",
            "import tensorflow_datasets\n",
            "from kerastuner import x\n",
            "from . import keras\n",
            "from .keras import model\n",
            "x = 'keras'\nprint(tensorflow)\n",
            "import_tensorflow = 1\n",
            "from mypkg import keras\n",
        ] {
            assert!(!imports_keras(source), "{source:?}");
        }
    }

    fn script(dir: &Utf8Path, name: &str, source: &str) -> Input {
        fs_err::write(dir.join(name), source).unwrap();
        Input::parse(name, dir).unwrap()
    }

    #[test]
    fn the_flag_decides_per_script_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(dir.path()).unwrap();
        let torch = script(dir, "t.py", "import torch\n");
        let keras = script(dir, "k.py", "import keras\n");
        let onnx = script(dir, "m.onnx", "");
        assert!(!Framework::Auto.discovers_keras(&torch));
        assert!(Framework::Auto.discovers_keras(&keras));
        assert!(Framework::Keras.discovers_keras(&torch));
        assert!(!Framework::Pytorch.discovers_keras(&keras));
        assert!(!Framework::Keras.discovers_keras(&onnx));

        let inputs = [torch.clone(), keras];
        assert_eq!(
            Framework::Auto.keras_reason(&inputs).as_deref(),
            Some("k.py imports TensorFlow or Keras")
        );
        assert_eq!(
            Framework::Auto.keras_reason(std::slice::from_ref(&torch)),
            None
        );
        assert_eq!(Framework::Pytorch.keras_reason(&inputs), None);
        assert_eq!(
            Framework::Keras.keras_reason(&[torch]).as_deref(),
            Some("--framework keras")
        );
        assert_eq!(Framework::Keras.keras_reason(&[onnx]), None);
    }

    #[test]
    fn a_script_is_read_once_when_its_input_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(dir.path()).unwrap();
        let keras = script(dir, "k.py", "# labels: author::me\nimport keras\n");
        // What the input knows was read when it was parsed: a later change of the file (or its
        // removal) does not reach it, so nothing reads the file again.
        fs_err::remove_file(dir.join("k.py")).unwrap();
        assert!(Framework::Auto.discovers_keras(&keras));
        assert_eq!(
            Framework::Auto
                .keras_reason(std::slice::from_ref(&keras))
                .as_deref(),
            Some("k.py imports TensorFlow or Keras")
        );
        assert_eq!(keras.script.labels["author"], ["me"]);
        assert!(keras.script.label_warnings.is_empty());
    }
}
