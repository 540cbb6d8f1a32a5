"""ONNX import (optional extra `onnx`): `import_onnx(model) -> ImportedModel(module, weights)`."""

from frontend.imported import ImportedModel
from frontend.onnx.importer import OnnxImportError, import_onnx

__all__ = ["ImportedModel", "OnnxImportError", "import_onnx"]
