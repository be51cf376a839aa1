"""The import rules of the house plan, read from the source with ``ast`` (every import, inside functions too).

- ``framework`` imports no domain and not ``zoo``; ``nlp`` imports only
  ``framework``; ``vision`` only ``framework``; ``video`` ``framework`` and
  ``vision``; ``zoo`` and ``tools`` sit on top.
- No import circles between modules, apart from the framework core's
  ``tensor`` ↔ ``ops`` pair (a module importing its own package's
  ``__init__`` does not count).
"""
import ast
import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PACKAGES = ("framework", "nlp", "vision", "video", "zoo")
ALLOWED = {  # package -> the project packages it may import
    "framework": {"framework"},
    "nlp": {"framework", "nlp"},
    "vision": {"framework", "vision"},
    "video": {"framework", "vision", "video"},
    "zoo": set(PACKAGES),
    "tools": set(PACKAGES),
}
CORE_PAIR = ("framework.tensor", "framework.ops")   # tensor <-> ops: the one circle the design allows


def _module_name(path):
    relative = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    return relative[:-len(".__init__")] if relative.endswith(".__init__") else relative


def _modules():
    """``{module name: path}`` of every .py under the project's packages and tools/."""
    found = {}
    for top in PACKAGES + ("tools",):
        for folder, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    found[_module_name(path)] = path
    return found


def _imports(module, path, known):
    """The project modules ``module`` imports (resolved to the longest known module name)."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    targets = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[:len(parts) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            targets += [f"{base}.{alias.name}" for alias in node.names] + [base]
    resolved = set()
    for target in targets:
        name = target
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            resolved.add(name)
    return resolved


def _graph():
    known = _modules()
    return {module: _imports(module, path, known) for module, path in known.items()}


def test_imports_flow_one_way():
    wrong = []
    for module, imported in _graph().items():
        top = module.split(".")[0]
        for target in imported:
            if target.split(".")[0] not in ALLOWED[top]:
                wrong.append(f"{module} imports {target}")
    assert not wrong, "imports against the layering:\n" + "\n".join(sorted(wrong))


def _is_core_pair(cycle):
    return all(m == CORE_PAIR[0] or m.startswith(CORE_PAIR[1]) or m == "framework" for m in cycle)


def test_no_import_circles():
    graph = _graph()
    # a module importing its own package's __init__ (or the package importing its modules) is not a circle
    edges = {m: {t for t in targets if not m.startswith(t + ".") and not t.startswith(m + ".")}
             for m, targets in graph.items()}
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node):                       # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 and not _is_core_pair(component):
                circles.append(sorted(component))

    for node in list(edges):
        if node not in index:
            visit(node)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)
