"""The import rules of the house plan, read from the source with ``ast`` (every import, inside functions too).

- ``framework`` imports no domain and not ``zoo``; ``nlp`` imports only
  ``framework``; ``vision`` only ``framework``; ``video`` ``framework`` and
  ``vision``; ``zoo`` and ``tools`` sit on top.
- No import circles between modules, apart from the framework core's
  ``tensor`` ↔ ``ops`` pair: ``framework.tensor``, the ``framework.ops``
  package and its modules, and nothing else. Every edge counts, a package's
  ``__init__`` importing its own modules included; ``from package import
  name`` is an edge to ``package.name`` when that is a module, else to the
  package (as import-linter's graph reads it).
- No private name (one leading underscore) is imported from, or read as an
  attribute of, another module of the project.
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


def _package_of(module, path):
    return module if path.endswith("__init__.py") else module.rpartition(".")[0]


def _absolute(node, package):
    """The module an ``ImportFrom`` names, made absolute."""
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parent = parts[:len(parts) - node.level + 1]
        base = ".".join(parent + ([base] if base else []))
    return base


def _longest_known(name, known):
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def _tree(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def _imports(module, path, known):
    """The project modules ``module`` imports: ``import a.b`` -> ``a.b``; ``from a import b`` -> ``a.b`` when
    that is a module, else ``a`` (each resolved to the longest known module name)."""
    package = _package_of(module, path)
    targets = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            targets += [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    resolved = {_longest_known(target, known) for target in targets}
    return {name for name in resolved if name and name != module}


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


def _in_core_pair(module):
    return module == CORE_PAIR[0] or module == CORE_PAIR[1] or module.startswith(CORE_PAIR[1] + ".")


def _circles(graph):
    """The strongly connected components of more than one module (Tarjan's algorithm, without recursion)."""
    index, low, stack, on_stack, circles = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circles_but_the_core_pair():
    circles = _circles(_graph())
    wrong = [c for c in circles if not all(_in_core_pair(m) for m in c)]
    assert not wrong, "import circles:\n" + "\n".join(" <-> ".join(c) for c in wrong)


def test_the_core_pair_is_the_circle_it_is_named():
    """The test sees the one allowed circle (so it is not blind to circles through packages): framework.tensor
    and the framework.ops package import each other, and framework.amp is outside it."""
    (core,) = [c for c in _circles(_graph()) if CORE_PAIR[0] in c]
    assert CORE_PAIR[1] in core and "framework.ops.math" in core
    assert "framework.amp" not in core and "framework.autocast" not in core


def _private_uses(module, path, known):
    """``(line, name)`` of each private name of another project module that ``module`` imports or reads."""
    package, found, modules = _package_of(module, path), [], {}
    tree = _tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES:
                    if alias.asname:
                        modules[alias.asname] = alias.name
                    else:
                        modules.setdefault(alias.name.split(".")[0], alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    modules[alias.asname or alias.name] = f"{base}.{alias.name}"
                elif _private(alias.name) and base != module:
                    found.append((node.lineno, f"{base}.{alias.name}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in modules:
                owner = ".".join([modules[value.id]] + chain[::-1])
                if owner != module:
                    found.append((node.lineno, f"{owner}.{node.attr}"))
    return found


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def test_no_private_names_across_modules():
    known = _modules()
    wrong = [f"{os.path.relpath(path, ROOT)}:{line}: {module} uses {name}"
             for module, path in sorted(known.items()) for line, name in _private_uses(module, path, known)]
    assert not wrong, "private names used across modules (make them public or move them):\n" + "\n".join(wrong)
