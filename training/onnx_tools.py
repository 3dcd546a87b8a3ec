"""ONNX tools every family's export shares: weight quantisation, metadata, and the check that
onnxruntime computes what torch does.

A family builds its graph (a ModelProto); :func:`write` quantises it if asked, stamps the metadata
and checks it; :func:`agreement` runs the same inputs through torch and onnxruntime.
"""

import io
import logging
import warnings

import numpy as np
import onnx
import onnxruntime
import torch
from onnx import TensorProto, helper, numpy_helper
from google.protobuf.message import DecodeError
from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

from inference.errors import DataError


def quantized(proto, large, small):
    """The same graph with every weight matrix in blocks of integers (onnxruntime's MatMulNBits,
    symmetric, one float scale per block): ``large`` = (bits, block) for matrices of at least
    LARGE entries, ``small`` for the others.

    A network run at batch 1 is bound by reading its weights, so fewer bytes run faster. Large
    matrices hold most of them and take 4 bits at little cost, while the small first and last
    layers, which read and write the features themselves, are where 4 bits cost accuracy.
    """
    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.WARNING)  # a line a node
    weights = {w.name: w for w in proto.graph.initializer}

    def matmuls(graph):  # Gemm(x, W, b) -> MatMul(x, W^T) + b: the quantizer rewrites MatMul only
        nodes = []
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == attr.GRAPH:
                    matmuls(attr.g)
            if node.op_type != "Gemm":
                nodes.append(node)
                continue
            assert [(a.name, a.i) for a in node.attribute if a.name != "alpha" and a.name != "beta"
                    ] == [("transB", 1)]  # as torch exports nn.Linear
            x, w, b = node.input
            if w + "/T" not in weights:
                weights[w + "/T"] = numpy_helper.from_array(numpy_helper.to_array(weights[w]).T.copy(),
                                                            w + "/T")
            y = node.output[0]
            nodes += [helper.make_node("MatMul", [x, w + "/T"], [y + "/mm"], name=y + "/mm"),
                      helper.make_node("Add", [y + "/mm", b], [y])]
        del graph.node[:]
        graph.node.extend(nodes)

    matmuls(proto.graph)
    used = {name for node in _nodes(proto.graph) for name in node.input}
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(w for name, w in weights.items() if name in used)
    products = [n for n in _nodes(proto.graph) if n.op_type == "MatMul" and n.input[1] in weights]
    for i, node in enumerate(products):  # the quantizer picks nodes by name
        node.name = node.name or f"matmul{i}"
    # learned matrices only: a 0/1 matrix (as RTN.pairs) selects and sums, and is exact as it is
    exact = [n.name for n in products if np.isin(numpy_helper.to_array(weights[n.input[1]]), (0.0, 1.0)).all()]
    is_large = {n.name: np.prod(weights[n.input[1]].dims) >= LARGE for n in products}
    for (bits, block), chosen in ((large, True), (small, False)):
        config = DefaultWeightOnlyQuantConfig(block_size=block, is_symmetric=True, accuracy_level=4, bits=bits)
        skip = exact + [n for n, big in is_large.items() if big != chosen]
        quantizer = MatMulNBitsQuantizer(proto, algo_config=config, nodes_to_exclude=skip)
        quantizer.process()
        proto = quantizer.model.model
    return proto


def _nodes(graph):
    """Every node of a graph and of its subgraphs."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == attr.GRAPH:
                yield from _nodes(attr.g)


# name: (bits, block) of the large matrices, then of the small ones; None: float32. How each
# measured on the benchmark and in time: docs/experiments.md.
WEIGHTS = {"float32": None, "int8": ((8, 128), (8, 128)), "mixed": ((4, 128), (8, 128)),
           "int4": ((4, 32), (4, 32))}
LARGE = 512 * 512  # entries from which a matrix counts as large


OPSET = 17


def traced(module, args, inputs, outputs, axes=None):
    """The ModelProto of ``module(*args)``, its batch axis dynamic (and the axes ``axes`` names, by input or
    output name, instead where it names them), with every constant and weight an
    initializer read directly by its nodes (the quantiser recognises no other weight). Traced with
    torch's TorchScript exporter (``dynamo=False``: the dynamo exporter needs onnxscript, which this
    project does not install)."""
    f = io.BytesIO()
    with warnings.catch_warnings():  # the TorchScript exporter is deprecated, and chosen above
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.onnx.export(module, tuple(args), f, input_names=inputs, output_names=outputs, opset_version=OPSET,
                          dynamo=False, dynamic_axes={name: {0: "batch"} for name in inputs + outputs} | (axes or {}))
    proto = onnx.load_from_string(f.getvalue())
    constants = [n for n in proto.graph.node if n.op_type == "Constant" and n.attribute[0].name == "value"]
    for node in constants:
        proto.graph.node.remove(node)
        proto.graph.initializer.append(onnx.numpy_helper.from_array(
            onnx.numpy_helper.to_array(node.attribute[0].t), node.output[0]))
    # The exporter stores a weight once and names its other uses through Identity nodes
    weights = {w.name for w in proto.graph.initializer}
    alias = {n.output[0]: n.input[0] for n in proto.graph.node if n.op_type == "Identity" and n.input[0] in weights}
    kept = [n for n in proto.graph.node if n.output[0] not in alias]
    for node in kept:
        node.input[:] = [alias.get(name, name) for name in node.input]
    del proto.graph.node[:]
    proto.graph.node.extend(kept)
    return proto


def write(proto, path, metadata, weights="float32"):
    """Write ``proto`` as one self-contained model file with ``metadata`` (strings) as its
    metadata_props and its weights stored as ``weights`` (a key of WEIGHTS)."""
    if WEIGHTS[weights]:
        proto = quantized(proto, *WEIGHTS[weights])
    onnx.helper.set_model_props(proto, {str(k): str(v) for k, v in metadata.items()})
    onnx.checker.check_model(proto, full_check=True)
    onnx.save(proto, str(path))


def metadata_of(path):
    """A model file's metadata as a dict of strings (without loading its weights into a session)."""
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except (OSError, DecodeError) as e:
        raise DataError(f"{path}: not an ONNX model file ({str(e).splitlines()[0][:160]})") from None
    return {p.key: p.value for p in proto.metadata_props}


def stored_weights(path):
    """Every weight the model file at ``path`` multiplies or adds, as float32 arrays in torch's layout (a
    matrix as (out, in)), by the name it is stored under less export's marks (a subgraph's ``step/``,
    a transposed copy's ``/T``, the quantiser's ``_Q4``): what a model file needs to become a network
    again (``--init`` from a model file). A matrix stored in blocks of integers (MatMulNBits) is read
    back by running its product on the identity in onnxruntime, so it comes back as every fill of
    that file multiplies by it, whatever the block layout."""
    proto = onnx.load(str(path))
    stored = {i.name: i for graph in _graphs(proto.graph) for i in graph.initializer}
    weights, read = {}, set()
    for node in _nodes(proto.graph):
        if node.op_type == "MatMulNBits":
            read.update(node.input[1:])
            weights[node.input[1]] = _dequantised(node, stored, proto.ir_version).T
        elif node.op_type in ("MatMul", "Gemm") and node.input[1] in stored:
            w = numpy_helper.to_array(stored[node.input[1]])
            weights[node.input[1]] = w if node.op_type == "Gemm" else w.T   # Gemm: transB, as torch exports
    for name, init in stored.items():
        if name not in weights and name not in read and init.data_type == onnx.TensorProto.FLOAT:
            weights[name] = numpy_helper.to_array(init)
    return {_plain_name(name): np.array(w, dtype=np.float32) for name, w in weights.items()}


def _plain_name(name):
    for mark in ("_Q4", "_Q8"):
        name = name.removesuffix(mark)
    return name.removeprefix("step/").removesuffix("/T")


def _graphs(graph):
    """A graph and its subgraphs."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == attr.GRAPH:
                yield from _graphs(attr.g)


def _dequantised(node, stored, proto_ir_version):
    """The (K, N) float matrix a MatMulNBits ``node`` multiplies by, its integer blocks and scales
    taken from ``stored`` (in a graph of the file's IR version, which its onnxruntime reads)."""
    attrs = {a.name: a.i for a in node.attribute}
    k, n = attrs["K"], attrs["N"]
    exact = {name: value for name, value in attrs.items() if name != "accuracy_level"}   # float products
    graph = helper.make_graph(
        [helper.make_node("MatMulNBits", ["A", *node.input[1:]], ["W"], domain="com.microsoft", **exact)],
        "dequantise", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [k, k])],
        [helper.make_tensor_value_info("W", TensorProto.FLOAT, [k, n])],
        [stored[name] for name in node.input[1:] if name])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("com.microsoft", 1)],
                             ir_version=proto_ir_version)
    session = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"A": np.eye(k, dtype=np.float32)})[0]


def agreement(module, path, inputs):
    """The largest absolute difference between ``module(**inputs)`` in torch and the model file at
    ``path`` run by onnxruntime on the same ``inputs`` (numpy arrays, by the graph's input names)."""
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ours = session.run(None, inputs)[0]
    with torch.no_grad():
        theirs = module(**{k: torch.from_numpy(np.asarray(v)) for k, v in inputs.items()})
    return float(np.abs(ours - theirs.numpy()).max())
