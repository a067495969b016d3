"""What the compile check remembers in the cache: the compile stages' Linalg and BiShengIR's outcomes.

Each is a :data:`~ninetoothed_ascend.cache.MEMO_KINDS` memo, JSON under a
stamp of what decides the compile
(:func:`~ninetoothed_ascend.check.compile_check.compile_stages`,
:class:`~ninetoothed_ascend.check.compile_check.BiShengIRStage`). A record
read back is data, never executed; one of another form is ignored (logged)
and the kernel compiled again.
"""

import dataclasses
import json
import logging

from ninetoothed_ascend.check import bishengir

logger = logging.getLogger(__name__)

#: The memo kind of the ``ttir`` and ``ttadapter`` output.
STAGES_MEMO = "stages"

#: The memo kind of BiShengIR's outcomes.
BISHENGIR_MEMO = "bishengir"

#: The outcomes kept: a timeout depends on the machine's load.
KEPT_OUTCOMES = ("hivmc", "ub_overflow", "error")


def remember_stages(cache, stamp, linalg, seconds):
    """Keep the Linalg text (``str``) and the seconds per stage (``dict`` ``str`` -> ``float``) of a compile under ``stamp``."""

    cache.remember(
        STAGES_MEMO, stamp, json.dumps({"linalg": linalg, "seconds": seconds})
    )


def recall_stages(cache, stamp):
    """``(linalg, seconds)`` kept under ``stamp``, or ``None``."""

    text = cache.memo(STAGES_MEMO, stamp)

    if text is None:
        return None

    try:
        record = json.loads(text)
        linalg, seconds = record["linalg"], record["seconds"]
    except (ValueError, TypeError, KeyError):
        linalg = seconds = None

    if (
        isinstance(linalg, str)
        and isinstance(seconds, dict)
        and all(
            isinstance(stage, str) and type(value) is float
            for stage, value in seconds.items()
        )
    ):
        return linalg, seconds

    logger.warning(
        "ninetoothed-ascend: ignoring the remembered compile stages %s "
        "(not a Linalg text and seconds); compiling again",
        stamp,
    )

    return None


def remember_outcome(cache, key, result):
    """Keep ``result`` (:class:`~ninetoothed_ascend.check.bishengir.BiShengIRResult`) under ``key``, unless it is a timeout, a crash on every run, or lacks the memory report it was asked for.

    What is kept is the compile's outcome, not how often its runs crashed
    (``crashes`` is kept as 0). A result whose memory-display run failed
    (``report_error``) is not kept, so that a later check asks for the plan again.
    """

    if (
        result.outcome in KEPT_OUTCOMES
        and result.crashes < bishengir.CRASH_RUNS
        and not result.report_error
    ):
        kept = dataclasses.replace(result, crashes=0)
        cache.remember(BISHENGIR_MEMO, key, json.dumps(dataclasses.asdict(kept)))


def recall_outcome(cache, key):
    """The :class:`~ninetoothed_ascend.check.bishengir.BiShengIRResult` kept under ``key``, or ``None``."""

    text = cache.memo(BISHENGIR_MEMO, key)

    if text is None:
        return None

    try:
        result = bishengir.BiShengIRResult(**json.loads(text))
    except (ValueError, TypeError):
        result = None

    if result is not None and _is_outcome(result):
        return result

    logger.warning(
        "ninetoothed-ascend: ignoring the remembered BiShengIR outcome %s "
        "(not one); compiling again",
        key,
    )

    return None


def _is_outcome(result):
    """Whether ``result`` (read back) has the types of a ``BiShengIRResult`` and a kept outcome."""

    return (
        result.outcome in KEPT_OUTCOMES
        and all(
            value is None or type(value) is int
            for value in (
                result.ub_required_bytes,
                result.ub_available_bytes,
                result.planned_ub_bytes,
            )
        )
        and type(result.seconds) is float
        and isinstance(result.message, str)
        and isinstance(result.arch, str)
        and type(result.crashes) is int
        and isinstance(result.report_error, str)
    )
