# lit configuration for ipu-stack's FileCheck tests (test/filecheck/**.mlir).
import os
import shutil
import sys

import lit.formats

config.name = "ipu-stack"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["examples", "bench", "docs", "venv", ".venv", "build", "Output"]

# Make the interpreter's console scripts (ipu-opt, filecheck) visible even when the
# venv is not activated: lit itself runs under that interpreter.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
config.environment["PYTHONPATH"] = config.test_source_root

# Round-trip macros in the style of xDSL's XDSL_ROUNDTRIP / XDSL_GENERIC_ROUNDTRIP.
config.substitutions.append(
    ("IPU_ROUNDTRIP",
     "ipu-opt %s --print-op-generic --split-input-file | ipu-opt --split-input-file | filecheck %s"))
config.substitutions.append(
    ("IPU_GENERIC_ROUNDTRIP",
     "ipu-opt %s --print-op-generic --split-input-file | filecheck %s --check-prefix=CHECK-GENERIC"))
config.substitutions.append(("%examples", os.path.join(config.test_source_root, "examples")))

# Substitutions apply in order: these come after the macros that mention the tools.
for tool, module in [("ipu-opt", "tools.ipu_opt"), ("ipu-run", "tools.ipu_run"),
                     ("ipu-objdump", "tools.ipu_objdump"), ("ipu-as", "tools.ipu_as")]:
    if shutil.which(tool, path=config.environment["PATH"]) is None:
        config.substitutions.append((rf"(?<![\w-]){tool}(?![\w-])", f"{sys.executable} -m {module}"))
