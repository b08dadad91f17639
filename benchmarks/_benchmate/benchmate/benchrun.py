"""``benchrun``: torchrun whose workers keep milabench's data channel.

torchrun starts its workers with ``subprocess.Popen``, which closes every inherited file
descriptor but 0, 1 and 2: a worker then cannot write to the ``DATA_FD`` pipe that milabench gave
torchrun. ``benchrun`` (the console script, or ``python -m benchmate.benchrun``) takes torchrun's
arguments and runs it with :func:`forward_voir_file` in force, which passes ``DATA_FD`` on to
every worker. Nothing else changes: each worker still gets a session of its own, as torch gives
it (torchrun stops a worker by signalling its process group).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from typing import Any, Iterator

from ._optional import require


def _worker_handler_class(base: type) -> type:
    """A subclass of torch's worker handler that starts workers with ``DATA_FD`` open."""

    class DataChannelHandler(base):  # type: ignore[misc, valid-type]
        """Starts one torchrun worker as torch does, ``DATA_FD`` inherited when it is a pipe
        (descriptors 0 to 2 are inherited anyway)."""

        def _popen(self, args: Any, env: dict[str, str]) -> subprocess.Popen:
            fd = int(os.environ.get("DATA_FD") or -1)
            if fd <= 2:
                return super()._popen(args, env)
            return subprocess.Popen(
                args=args,
                env=env,
                stdout=self._stdout,
                stderr=self._stderr,
                start_new_session=True,
                pass_fds=(fd,),
            )

    return DataChannelHandler


@contextlib.contextmanager
def forward_voir_file() -> Iterator[None]:
    """While the block runs, torchrun (``torch.distributed.run``, called in this process) starts
    its workers with the ``DATA_FD`` descriptor open; torch's own handler comes back after."""
    api = require("torch.distributed.elastic.multiprocessing.api", "benchmate.benchrun", install="torch")
    saved = api.get_subprocess_handler, api.SubprocessHandler
    handler = _worker_handler_class(api.SubprocessHandler)

    def get_subprocess_handler(*args: Any, **kwargs: Any) -> Any:
        return handler(*args, **kwargs)

    api.get_subprocess_handler, api.SubprocessHandler = get_subprocess_handler, handler
    try:
        yield
    finally:
        api.get_subprocess_handler, api.SubprocessHandler = saved


def main(argv: list[str] | None = None) -> None:
    """The ``benchrun`` command: torchrun's command line, workers keeping ``DATA_FD``."""
    run = require("torch.distributed.run", "benchrun", install="torch")
    args = run.parse_args(argv)
    with forward_voir_file():
        run.run(args)


if __name__ == "__main__":
    main()
