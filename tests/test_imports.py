"""The packages' import graph, read from the source: dependencies point one way (addon -> inference,
lab -> inference, training -> lab and inference), inference never imports lab, training or addon
(Blender ships it alone), no import cycle within a package or across them (at module level or put off into
a function), and every package imports inside a function only what may be missing (OPTIONAL)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("inference", "lab", "training", "addon")
# not everywhere the runtime or the lab runs: Blender's Python has no tqdm or matplotlib, onnxruntime may
# fail to load (the panel says so), mujoco serves CARL only, and torch (training's speed) is the lab's option
OPTIONAL = ("tqdm", "matplotlib", "onnxruntime", "mujoco", "training.rtn.speed")


def _module_of(path):
    """``inference/mann/runtime.py`` -> ``inference.mann.runtime``; a package's ``__init__.py`` -> the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_of(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def _imports(module, path, module_level):
    """The project modules ``module`` (at ``path``) imports: at module level only, or anywhere. The
    add-on's ``..inference`` is the top-level ``inference`` (the extension's root package stands above both)."""
    tree = ast.parse(path.read_text(), str(path))
    if module_level:   # statements under a module-level if or try run on import too
        nodes = [n for top in tree.body for n in (ast.walk(top) if isinstance(top, (ast.If, ast.Try)) else [top])]
    else:
        nodes = list(ast.walk(tree))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[:len(parts) - node.level + 1] if node.level else []
            stem = ".".join([*base, node.module] if node.module else base)
            names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names]
        else:
            continue
        found.update(n for n in names if n.split(".")[0] in PACKAGES)
    return {n if n in MODULES else n.rpartition(".")[0] for n in found} - {module}


def test_the_packages_are_all_read():
    assert {"inference.cli", "inference.modelfile", "lab.dataset", "lab.benchmark", "training.loop",
            "addon.generate"} <= set(MODULES)


def test_inference_never_imports_lab_training_or_addon():
    wrong = {(m, i) for m, p in MODULES.items() if m.startswith("inference")
             for i in _imports(m, p, module_level=False) if not i.startswith("inference")}
    assert not wrong


def test_dependencies_point_one_way():
    allowed = {"inference": {"inference"}, "addon": {"addon", "inference"}, "lab": {"lab", "inference"},
               "training": {"training", "lab", "inference"}}
    wrong = {(m, i) for m, p in MODULES.items() for i in _imports(m, p, module_level=True)
             if i.split(".")[0] not in allowed[m.split(".")[0]]}
    assert not wrong


def _cycles(module_level):
    """Every import cycle among the project's modules, each as the trail of modules round it."""
    graph = {m: _imports(m, p, module_level) & set(MODULES) for m, p in MODULES.items()}
    cycles, state = [], {}

    def visit(m, trail):
        state[m] = "open"
        for n in sorted(graph[m]):
            if state.get(n) == "open":
                cycles.append(trail[trail.index(n):] + [n])
            elif n not in state:
                visit(n, trail + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def test_no_import_cycle_at_module_level_or_hidden_in_a_function():
    assert not _cycles(module_level=True)
    assert not _cycles(module_level=False)   # a cycle an import inside a function only postpones


def test_modules_import_in_functions_only_what_may_be_missing():
    """Anything else is imported at the top, where a reader looks for it; in training, only the plots import
    matplotlib, when they draw (MANN's labels plot choosing its backend before pyplot loads)."""
    inside = set()
    for m, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            for node in ast.walk(function):
                if isinstance(node, ast.Import):
                    inside.update((m, a.name) for a in node.names)
                elif isinstance(node, ast.ImportFrom):
                    inside.add((m, "." * node.level + (node.module or "")))
    assert {name for _, name in inside} & {"tqdm", "matplotlib", "onnxruntime"}   # the check sees them
    assert {(m, name) for m, name in inside if not name.startswith(OPTIONAL)} == set()
    assert {m for m, name in inside if m.startswith("training")} == {"training.loop", "training.mann.labels"}
