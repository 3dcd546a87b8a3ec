"""ONNX tools every family's export shares: weight quantisation, metadata, and the check that
onnxruntime computes what torch does.

A family builds its graph (a ModelProto); :func:`write` quantises it if asked, stamps the metadata
and checks it; :func:`agreement` runs the same inputs through torch and onnxruntime.
"""

import functools
import io
import logging
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime
import torch
from onnx import TensorProto, helper, numpy_helper
from google.protobuf.message import DecodeError
from onnxruntime.quantization import QuantType, quantize_dynamic
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
    proto, weights, products = _products(proto)
    exact = [n.name for n in products if _selects(weights[n.input[1]])]   # learned matrices only
    is_large = {n.name: np.prod(weights[n.input[1]].dims) >= LARGE for n in products}
    for (bits, block), chosen in ((large, True), (small, False)):
        config = DefaultWeightOnlyQuantConfig(block_size=block, is_symmetric=True, accuracy_level=4, bits=bits)
        skip = exact + [n for n, big in is_large.items() if big != chosen]
        quantizer = MatMulNBitsQuantizer(proto, algo_config=config, nodes_to_exclude=skip)
        quantizer.process()
        proto = quantizer.model.model
    return proto


def dynamic(proto):
    """The same graph with its inner layers' matrices in 8-bit integers (one scale per output column), each
    product's input rounded to 8 bits as it runs (onnxruntime's dynamic quantisation, DynamicQuantizeMatMul).

    A network that multiplies many rows at once, as a transformer over a whole window does, is bound by
    arithmetic rather than by reading its weights, and integer products (VNNI) are faster than float
    ones there. The layers that read the features in and write them out stay float (:func:`_inner`):
    rounding there costs the most accuracy.
    """
    if any(attr.type == attr.GRAPH for node in proto.graph.node for attr in node.attribute):
        raise DataError(f"--weights {DYNAMIC} is for a network that reads a whole window at once (a transformer); "
                        "a recurrent one steps a frame at a time, bound by reading its weights: give int8 or mixed")
    proto, weights, products = _products(proto)
    inner = _inner(proto.graph, [n for n in products if not _selects(weights[n.input[1]])])
    if not inner:   # the quantiser takes an empty list for every node
        raise DataError(f"--weights {DYNAMIC}: the network has no layers between those that read its features in and "
                        "write them out; give float32 or int8")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)   # the quantiser advises pre-processing, a graph without shapes, on the root logger
    try:
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "dynamic.onnx"
            quantize_dynamic(proto, out, weight_type=QuantType.QInt8, per_channel=True, nodes_to_quantize=inner)
            return onnx.load(str(out))
    finally:
        root.setLevel(level)


def _inner(graph, layers):
    """The names of ``layers`` (MatMul nodes by a learned matrix) that neither read the graph's inputs nor
    write its outputs through no other of them."""
    by_output = {n.output[0]: n for n in layers}
    producer = {o: n for n in graph.node for o in n.output}
    consumers = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    outputs = {o.name for o in graph.output}

    @functools.cache
    def after_layer(tensor):
        node = producer.get(tensor)
        return node is not None and (node.output[0] in by_output or any(after_layer(i) for i in node.input if i))

    @functools.cache
    def to_output(tensor):
        return tensor in outputs or any(to_output(o) for node in consumers.get(tensor, ())
                                        if node.output[0] not in by_output for o in node.output)

    return [n.name for n in layers if after_layer(n.input[0]) and not to_output(n.output[0])]


def _selects(weight):
    """Whether a matrix holds only zeros and ones (as RTN.pairs): it selects and sums, exact as it is."""
    return bool(np.isin(numpy_helper.to_array(weight), (0.0, 1.0)).all())


def floated(proto):
    """The same graph with every matrix stored in blocks of integers (MatMulNBits) as the float matrix it
    multiplies by (:func:`_dequantised`): a model file's weights requantised without its checkpoint."""
    stored = {i.name: i for i in proto.graph.initializer}
    nodes, matrices = [], []
    for node in proto.graph.node:
        if node.op_type != "MatMulNBits":
            nodes.append(node)
            continue
        name = node.input[1].removesuffix("_Q8").removesuffix("_Q4")
        matrices.append(numpy_helper.from_array(_dequantised(node, stored, proto.ir_version), name))
        bias = node.input[5] if len(node.input) > 5 else ""
        product = node.output[0] + "/mm" if bias else node.output[0]
        nodes.append(helper.make_node("MatMul", [node.input[0], name], [product], name=node.name))
        if bias:
            nodes.append(helper.make_node("Add", [product, bias], list(node.output)))
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    used = {name for node in nodes for name in node.input}
    kept = [i for i in proto.graph.initializer if i.name in used] + matrices
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(kept)
    return proto


def _products(proto):
    """``(proto, weights, products)``: the graph with every Gemm as a MatMul and an Add (the quantisers
    rewrite MatMul only), its initializers by name, and its MatMul nodes by a weight, each named (the
    quantisers pick nodes by name)."""
    weights = {w.name: w for w in proto.graph.initializer}

    def matmuls(graph):  # Gemm(x, W, b) -> MatMul(x, W^T) + b
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
    for i, node in enumerate(products):
        node.name = node.name or f"matmul{i}"
    return proto, weights, products


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
DYNAMIC = "dynamic"   # the other choice of precision: dynamic()


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
    metadata_props and its weights stored as ``weights`` (a key of WEIGHTS, or DYNAMIC)."""
    if weights == DYNAMIC:
        proto = dynamic(proto)
    elif WEIGHTS[weights]:
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
