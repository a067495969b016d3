"""A cache entry: the variants of one kernel and its launch facts, and the check of a stored entry."""

import dataclasses
import hashlib
import keyword
import pathlib
import re

#: Bump when the layout or the entry format changes. 2: entries record their
#: key and definition. 3: an entry holds the CUDA variant and those of the
#: others built so far, and the launch facts (:class:`Entry`). 4: an entry
#: records whether its NineToothed source was generated here from its
#: definition (``verified``), and the digest of the environment it was made
#: in (``environment``). 5: each variant holds the facts its readers need
#: (:attr:`Variant.facts`). 6: an entry records where it came from
#: (``origin``). An entry of another format is ignored and the kernel
#: generated again.
FORMAT = 6

#: Where an entry came from (:attr:`Entry.origin`'s ``kind``): made here by
#: ``make`` from the kernel's definition; built by ``warm`` or ``check``
#: from a manifest; imported from an archive; read from a remote store.
ORIGINS = ("generated", "manifest", "archive", "remote")

#: The longest ``from`` an origin records (a path or a URL), in characters.
MAX_ORIGIN_LENGTH = 4096


#: The variants an entry can hold; ``jit.variants.VARIANTS``. The first,
#: NineToothed's own source, is in every entry: the others are built from it.
VARIANT_NAMES = ("cuda", "npu", "cpu")


#: A sha256 in hexadecimal, as keys and source digests are written.
DIGEST = re.compile(r"[0-9a-f]{64}")


def text_digest(text):
    """The sha256 of ``text`` (``str``, encoded as UTF-8), in hexadecimal: the name of a stored source."""

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclasses.dataclass
class Variant:
    """One generated variant of a kernel.

    :param source: the module's text, or ``None`` if it could not be built.
    :param rewrites: ``(pass name, number of rewrites)`` for each pass that
        changed the code, in pipeline order.
    :param error: why the variant could not be built, or ``None``.
    :param path: where ``source`` is stored, once stored.
    :param facts: what the variant's readers need of the facts its passes
        published (``compiler.facts.stored``: kernel name -> ``dict`` with
        ``layout_flags`` and ``transposed``, ``list`` of parameter names,
        for the UB model on the variant's source); ``{}`` for none.
    """

    source: str | None
    rewrites: tuple[tuple[str, int], ...] = ()
    error: str | None = None
    path: pathlib.Path | None = None
    facts: dict = dataclasses.field(default_factory=dict)

    @property
    def digest(self):
        return text_digest(self.source)


@dataclasses.dataclass
class Entry:
    """Everything a handle needs, as stored for one kernel key.

    :param kernel_name: name of the ``triton.jit`` kernel in each source.
    :param launch_name: name of the launch function in each source.
    :param variants: ``dict`` from variant name (``"cuda"``, ``"npu"``,
        ``"cpu"``) to :class:`Variant`.
    :param counters_delta: how far generation advanced NineToothed's naming
        counters, replayed on a hit.
    :param definition: the kernel's definition digest (sha256 hex), or
        ``None`` where the entry is only looked up by key.
    :param launch: facts about the launch function, read from NineToothed's
        source once, when the kernel was generated, so that a handle made
        from the entry reads no source: ``dict`` with ``parameters`` (its
        parameter names, ``list`` of ``str``, or ``None`` where it takes
        ``*args``/``**kwargs``), ``tensors`` (those that are tensors) and
        ``requirements`` (what it requires of its arguments, the fields of
        ``compiler.launch.Requirements`` as lists, or ``None``), the
        compiler's analysis (``compiler.launch.launch_facts``), and ``max_num_configs``
        (the user's, a positive ``int``; absent where not given, and the
        NPU variant, built from it, bounds its configs by it); ``None``
        when unknown (then the handle dispatches generically and checks
        nothing).
    :param verified: ``True`` where NineToothed's source was generated in
        this cache from the kernel's definition, or compared with what the
        definition generates; ``False`` for an entry that came from outside
        (``warm`` or ``check`` from a manifest, ``import`` of an archive),
        whose source is bound to its definition only by what its author
        wrote: the first ``make`` of the kernel, which has the definition,
        generates the source and compares (``jit``). A remote store's entry
        whose HMAC verified with the fleet's secret keeps what its writer
        recorded (``jit.admit_authenticated_entry``).
    :param environment: sha256 hex of the environment the entry was made
        in (``jit.fingerprint.environment_digest``), or ``None`` where the
        entry is only held in memory; ``clear --stale`` reads it.
    :param origin: where the entry came from, for ``ls`` and ``info``:
        ``dict`` with ``kind`` (one of :data:`ORIGINS`) and ``from``
        (``str``: the manifest's or archive's path, the store's URL without
        credentials; ``None`` for ``generated``). Informational: no check
        reads it.
    """

    kernel_name: str
    launch_name: str
    variants: dict[str, Variant]
    counters_delta: tuple[int, int] = (0, 0)
    definition: str | None = None
    launch: dict | None = None
    verified: bool = True
    environment: str | None = None
    origin: dict = dataclasses.field(
        default_factory=lambda: {"kind": ORIGINS[0], "from": None}
    )

    @classmethod
    def from_stored(cls, stored, variants):
        """The entry ``stored`` describes, with ``variants`` read from it.

        :param stored: ``dict``, an entry's JSON, checked by :func:`check_entry`.
        :param variants: ``dict`` from variant name to :class:`Variant`.
        :return: :class:`Entry`.
        """

        return cls(
            kernel_name=stored["kernel_name"],
            launch_name=stored["launch_name"],
            variants=variants,
            counters_delta=tuple(stored["counters_delta"]),
            definition=stored["definition"],
            launch=stored["launch"],
            verified=stored["verified"],
            environment=stored["environment"],
            origin=stored["origin"],
        )

    def digests(self):
        """Return the sha256 of each variant built so far (``None`` for one that failed to build).

        :return: ``dict`` from variant name to ``str`` or ``None``.
        """

        return {
            name: variant.digest if variant.source is not None else None
            for name, variant in self.variants.items()
        }


class EntryError(ValueError):
    """A stored entry is malformed or belongs to another key; the message says which field and why."""


def check_entry(stored, key):
    """Check that ``stored`` (a parsed entry file) is a well-formed entry of ``key``.

    Every field is checked for its type, so that a malformed entry is refused
    here rather than failing later inside a handle: ``format`` is
    :data:`FORMAT`, ``key`` equals ``key`` (an entry moved or copied under
    another key's name is refused), ``definition`` is a sha256 hex digest,
    ``kernel_name`` and ``launch_name`` are identifiers, ``counters_delta``
    two non-negative ``int``, ``variants`` the first of
    :data:`VARIANT_NAMES` and any of the others, each with a ``digest``
    (sha256 hex, or ``None`` with an ``error`` string), ``rewrites``
    (``[pass name, count]`` pairs) and ``facts`` as :class:`Variant`
    describes them (names that are identifiers), and ``launch`` as :class:`Entry`
    describes it, its parameter names identifiers and no keywords (a handle
    compiles a ``__call__`` with them), its requirements those of its own
    parameters (every index and dimension within range: a handle compiles
    the argument check from them), ``verified`` a ``bool``,
    ``environment`` a sha256 hex digest and ``origin`` as :class:`Entry`
    describes it.

    :param stored: what ``json.loads`` returned for the entry file.
    :param key: ``str``, the key the entry is stored under.
    :raises EntryError: the first field that is wrong.
    """

    def require(condition, message):
        if not condition:
            raise EntryError(message)

    require(isinstance(stored, dict), "not a JSON object")
    require(
        stored.get("format") == FORMAT,
        f"format {stored.get('format')!r}, this version reads {FORMAT}",
    )
    require(
        stored.get("key") == key,
        f"it records key {str(stored.get('key'))[:64]!r}: it belongs to another kernel",
    )
    require(
        isinstance(stored.get("definition"), str)
        and DIGEST.fullmatch(stored["definition"]),
        "definition is not a sha256 digest",
    )

    for field in ("kernel_name", "launch_name"):
        require(
            isinstance(stored.get(field), str) and stored[field].isidentifier(),
            f"{field} is not an identifier",
        )

    delta = stored.get("counters_delta")
    require(
        isinstance(delta, list)
        and len(delta) == 2
        and all(type(n) is int and n >= 0 for n in delta),
        "counters_delta is not two non-negative integers",
    )
    variants = stored.get("variants")
    require(
        isinstance(variants, dict)
        and VARIANT_NAMES[0] in variants
        and set(variants) <= set(VARIANT_NAMES),
        f"variants are not exactly {VARIANT_NAMES[0]} and any of "
        f"{', '.join(VARIANT_NAMES[1:])}",
    )
    require(
        isinstance(variants[VARIANT_NAMES[0]], dict)
        and variants[VARIANT_NAMES[0]].get("digest") is not None,
        f"variant {VARIANT_NAMES[0]}, which the others are built from, has no source",
    )

    for name, record in variants.items():
        require(isinstance(record, dict), f"variant {name} is not a JSON object")
        digest, error = record.get("digest"), record.get("error")
        require(
            (isinstance(digest, str) and DIGEST.fullmatch(digest) and error is None)
            or (digest is None and isinstance(error, str)),
            f"variant {name} has neither a sha256 digest nor an error",
        )
        rewrites = record.get("rewrites")
        require(
            isinstance(rewrites, list)
            and all(
                isinstance(r, list)
                and len(r) == 2
                and isinstance(r[0], str)
                and type(r[1]) is int
                for r in rewrites
            ),
            f"variant {name} has malformed rewrites",
        )
        require(
            _facts_are_names(record.get("facts")), f"variant {name} has malformed facts"
        )

    require("launch" in stored, "launch is missing")
    problem = _launch_problem(stored["launch"])
    require(problem is None, f"launch {problem}")
    require(type(stored.get("verified")) is bool, "verified is not true or false")
    require(
        isinstance(stored.get("environment"), str)
        and DIGEST.fullmatch(stored["environment"]),
        "environment is not a sha256 digest",
    )
    origin = stored.get("origin")
    require(
        isinstance(origin, dict)
        and set(origin) == {"kind", "from"}
        and origin["kind"] in ORIGINS
        and (
            origin["from"] is None
            or (
                isinstance(origin["from"], str)
                and len(origin["from"]) <= MAX_ORIGIN_LENGTH
            )
        ),
        f"origin is not a kind of {', '.join(ORIGINS)} and where from",
    )


def _launch_problem(launch):
    if launch is None:
        return None

    if not isinstance(launch, dict):
        return "is not a JSON object"

    parameters, tensors = launch.get("parameters"), launch.get("tensors")

    if parameters is not None and not (
        isinstance(parameters, list) and all(map(_is_name, parameters))
    ):
        return "parameters are not identifiers"

    if not isinstance(tensors, list) or not set(map(str, tensors)) <= set(
        parameters or ()
    ):
        return "tensors are not among its parameters"

    limit = launch.get("max_num_configs")

    if limit is not None and not (type(limit) is int and limit >= 1):
        return "max_num_configs is not a positive integer"

    requirements = launch.get("requirements")

    if requirements is None:
        return None

    if not (
        isinstance(requirements, dict)
        and isinstance(requirements.get("parameters"), list)
        and all(map(_is_name, requirements["parameters"]))
        and _int_pairs(requirements.get("ndims"))
        and isinstance(requirements.get("equal_sizes"), list)
        and all(map(_int_pairs, requirements["equal_sizes"]))
        and isinstance(requirements.get("equal_numels", []), list)
        and all(map(_ints, requirements.get("equal_numels", [])))
        and _ints(requirements.get("accessed", []))
    ):
        return "requirements are malformed"

    if parameters is not None and requirements["parameters"] != parameters:
        return "requirements name other parameters than the launch function"

    # What the argument check indexes: a parameter per tensor, and its
    # dimensions below its number of dimensions.
    ndims = dict(map(tuple, requirements["ndims"]))

    if len(ndims) != len(requirements["ndims"]) or not all(
        0 <= index < len(requirements["parameters"]) and ndim >= 0
        for index, ndim in ndims.items()
    ):
        return "requirements index parameters that are not there"

    if not all(
        index in ndims and 0 <= dimension < ndims[index]
        for group in requirements["equal_sizes"]
        for index, dimension in group
    ):
        return "requirements compare dimensions that are not there"

    return None


def _facts_are_names(facts):
    # ``Variant.facts``: kernel name -> ``{"layout_flags": [...], "transposed": [...]}``.
    return isinstance(facts, dict) and all(
        _is_name(kernel)
        and isinstance(kept, dict)
        and set(kept) == {"layout_flags", "transposed"}
        and all(
            isinstance(names, list) and all(map(_is_name, names))
            for names in kept.values()
        )
        for kernel, kept in facts.items()
    )


def _is_name(name):
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def _ints(numbers):
    return isinstance(numbers, list) and all(type(n) is int for n in numbers)


def _int_pairs(pairs):
    return isinstance(pairs, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(type(n) is int for n in pair)
        for pair in pairs
    )
