"""Two small Keras models (TensorFlow backend), called the way an ordinary script calls them: a
``Sequential`` perceptron on a batch of 8 rows, ten times, and a subclassed ``Scorer`` with two
inputs, three times. Layers and models are named, so their summaries (and model hashes) do not
depend on what else the process built before."""

import numpy as np
import tensorflow as tf
import keras

keras.utils.set_random_seed(0)


class Scorer(keras.Model):
    """Scores pairs of feature rows: one shared encoder on each side, the sum scored."""

    def __init__(self, hidden: int = 16, **kwargs):
        super().__init__(**kwargs)
        self.encode = keras.layers.Dense(hidden, activation="relu", name="encode")
        self.score = keras.layers.Dense(1, name="score")

    def call(self, left, right):
        """One score per pair of rows of ``left`` and ``right``."""
        return self.score(self.encode(left) + self.encode(right))


def main():
    mlp = keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(128, activation="relu", name="hidden_1"),
            keras.layers.Dense(128, activation="relu", name="hidden_2"),
            keras.layers.Dense(10, name="classes"),
        ],
        name="mlp",
    )
    batch = tf.random.uniform((8, 64))
    for _ in range(10):
        scores = mlp(batch)
    print("predicted classes:", tf.argmax(scores, axis=1).numpy().tolist())

    scorer = Scorer(name="scorer")
    pairs = np.random.default_rng(0).random((4, 32), dtype=np.float32)
    for _ in range(3):
        similarity = scorer(pairs, right=pairs[::-1].copy())
    print("scores:", similarity.numpy().ravel().round(3).tolist())


if __name__ == "__main__":
    main()
