from milabench.pack import Package
import milabench.commands as cmd


class Scale(Package):
    """The scale figure's benchmark: a plain script, no voir, no install."""

    main_script = "main.py"

    async def install(self):
        pass

    def build_run_plan(self):
        python = str(self.dirs.venv / "bin" / "python")
        return cmd.CmdCommand(self, python, str(self.dirs.code / self.main_script))


__pack__ = Scale
