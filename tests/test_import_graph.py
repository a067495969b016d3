"""The package's import graph and its rooms: no module imports itself through others, no two packages import each other, no long module without a reason."""

import ast
import collections
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "src" / "ninetoothed_ascend"


def _modules():
    # Dotted name -> path of every module of the package.
    return {
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
            ".__init__"
        ): path
        for path in PACKAGE.rglob("*.py")
    }


def _imports(modules):
    # Module -> the package's modules it imports when it is imported (its
    # module-level statements; an import inside a function runs later).
    # ``from p import m`` imports ``p.m`` where that is a module, else ``p``.
    edges = collections.defaultdict(set)

    for name, path in modules.items():
        body = ast.parse(path.read_text()).body
        statements = [
            inner
            for node in body
            for inner in (node.body if isinstance(node, ast.Try) else [node])
        ]

        for node in statements:
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [
                    f"{node.module}.{alias.name}"
                    if f"{node.module}.{alias.name}" in modules
                    else node.module
                    for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue

            edges[name] |= {t for t in targets if t in modules and t != name}

    return edges


def _circles(edges, nodes):
    # The strongly connected components of more than one module (Tarjan).
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)

        for other in edges[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])

        if low[node] == index[node]:
            component = []

            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)

                if other == node:
                    break

            if len(component) > 1:
                found.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)

    return found


def test_no_module_imports_itself_through_others():
    modules = _modules()

    assert _circles(_imports(modules), modules) == []


def test_no_two_packages_import_each_other():
    modules = _modules()

    def package(name):
        return name if modules[name].name == "__init__.py" else name.rsplit(".", 1)[0]

    imported = collections.defaultdict(set)

    for name, targets in _imports(modules).items():
        for target in targets:
            a, b = package(name), package(target)

            # A package importing its own subpackages is its structure.
            if not (a == b or b.startswith(a + ".") or a.startswith(b + ".")):
                imported[a].add(b)

    assert (
        sorted(
            (a, b)
            for a in imported
            for b in imported[a]
            if a < b and a in imported.get(b, ())
        )
        == []
    )


#: Lines a module of the package may have without saying why it is one module.
LONG_MODULE_LINES = 700


def test_a_module_over_700_lines_says_why_it_is_one():
    unexplained = [
        f"{name}: {lines} lines"
        for name, path in sorted(_modules().items())
        if (lines := len(path.read_text().splitlines())) > LONG_MODULE_LINES
        and "Why one module"
        not in (ast.get_docstring(ast.parse(path.read_text())) or "")
    ]

    assert unexplained == []
