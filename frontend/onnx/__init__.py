"""ONNX import (optional extra `onnx`): `import_onnx(model) -> ImportedModel(module, weights)`."""

from frontend.imported import ImportedModel
from frontend.onnx.importer import import_onnx
from frontend.onnx.nodes import OnnxImportError

__all__ = ["ImportedModel", "OnnxImportError", "import_onnx"]
