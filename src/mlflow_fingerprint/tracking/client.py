"""The one place that writes to MLflow. Every call here runs on a background thread (the uploader,
or ``fingerprint sync``), never on the training thread.

Failures come out as one of two exceptions, because they need opposite handling:
:class:`Unreachable` (connection refused, timeout, 5xx, a locked database, and :class:`Unauthorized`
for 401/403: keep the data, try again later) and :class:`Rejected` (the store answered that the
record itself is invalid: retrying would fail forever, so the record is quarantined in the spool
with the reason and skipped). "No such run" (404) counts as Unreachable: it means the wrong store
(or a deleted run), and skipping would throw the data away. Credentials are MLflow's own
(``MLFLOW_TRACKING_USERNAME``/``PASSWORD``, ``MLFLOW_TRACKING_TOKEN``, or ``user:password@`` in
the URI): MLflow's client reads them on every request.

MLflow's own HTTP client retries a refused connection for minutes with exponential back-off; a
quick ``/health`` probe with no retries (:func:`reachable`) before each upload pass keeps the
uploader from sitting in those retries when the server is simply gone.
"""

from __future__ import annotations

import functools
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import mlflow
from mlflow.entities import Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient

from .. import layout
from ..capture.reading import first_line
from ..errors import Busy, Rejected, Unauthorized, Unreachable
from ..redact import URL_USERINFO, strip_url_credentials
from . import events
from .local_store import is_busy

T = TypeVar("T")
_log = logging.getLogger("mlflow_fingerprint")

THREAD_PREFIX = "mfp-"
PROBE_TIMEOUT_S = 2.0
# MLflow's per-request limits (mlflow/utils/validation.py).
MAX_METRICS_PER_BATCH = 1000
MAX_PARAMS_TAGS_PER_BATCH = 100


def call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run one MLflow call, translating every failure into Unreachable or Rejected. Inside
    :func:`abandon_on`, the call runs on a helper thread and is given up when the event is set."""
    stop: threading.Event | None = getattr(_local, "stop", None)
    if stop is None:
        return _translated(fn, *args, **kwargs)
    box: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            box["result"] = _translated(fn, *args, **kwargs)
        except BaseException as exc:
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name=f"{THREAD_PREFIX}call", daemon=True).start()
    while not done.wait(0.1):
        if stop.is_set():
            raise Unreachable(getattr(_local, "reason", None) or GIVEN_UP)
    if "error" in box:
        raise box["error"]
    return box["result"]


def _translated(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    try:
        return fn(*args, **kwargs)
    except MlflowException as exc:
        status = exc.get_http_status_code()
        message = first_line(exc, 300)
        if is_busy(message):  # a sqlite file another process is writing: retry soon
            raise Busy(message) from None
        if status in AUTH_STATUSES:
            raise Unauthorized(unauthorized(status, message)) from None
        if 400 <= status < 500 and status not in (404, 408, 429):
            raise Rejected(message) from None
        raise Unreachable(message) from None
    except Exception as exc:  # requests/OSError/sqlalchemy errors: the store is not usable now
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in AUTH_STATUSES:  # an artifact upload's HTTPError
            raise Unauthorized(unauthorized(status, first_line(exc, 300))) from None
        if is_busy(str(exc)):
            raise Busy(first_line(exc, 300)) from None
        raise Unreachable(f"{type(exc).__name__}: {first_line(exc, 300)}") from None


AUTH_STATUSES = (401, 403)


def unauthorized(status: int, message: str) -> str:
    """Why a call was refused for its credentials, and how MLflow takes them."""
    shown = URL_USERINFO.sub(lambda m: m.group("scheme"), message)
    return (
        f"not authorized ({status}): {shown}; give credentials as "
        "MLflow takes them: MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, "
        "MLFLOW_TRACKING_TOKEN, or user:password@ in the tracking URI"
    )


_local = threading.local()


GIVEN_UP = "given up: the run closed while the store was not answering"


@contextmanager
def abandon_on(stop: threading.Event, reason: str = GIVEN_UP) -> Iterator[None]:
    """Within this block, on this thread, a call still waiting on the store when ``stop`` is set
    is given up. This is what lets a closed run's uploader exit, and unlock its spool for
    ``fingerprint sync``, under a hung server. The call may still complete later; what ``sync``
    then sends again is stored once (metric values are deduplicated by MLflow's SQL stores, tags,
    params, artifacts and the status are overwritten alike, and a run is looked up by its spool
    id before one is created). ``reason`` is what the given-up call raises (``Unreachable``)."""
    _local.stop, _local.reason = stop, reason
    try:
        yield
    finally:
        _local.stop = _local.reason = None


def is_remote(uri: str) -> bool:
    return uri.startswith(("http://", "https://"))


def reachable(uri: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether a tracking server answers at all, in at most ``timeout_s``; local stores always do.

    Any HTTP answer counts (a proxy may not route ``/health``); only connection errors and
    timeouts mean unreachable.
    """
    if not is_remote(uri):
        return True
    health = strip_url_credentials(uri).rstrip("/") + "/health"  # unauthenticated endpoint
    try:
        with urllib.request.urlopen(health, timeout=timeout_s):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


class _OurThreadsOnly(logging.Filter):
    """Drop urllib3's per-retry warnings raised on our threads: the user gets one warning from us,
    not a line per retry; the same warnings from the user's own threads still show."""

    def filter(self, record: logging.LogRecord) -> bool:
        # threadName is None where logging.logThreads is off: not ours to tell, so kept
        return record.threadName is None or not record.threadName.startswith(THREAD_PREFIX)


_filter_installed = threading.Lock()
_FILTER = _OurThreadsOnly()


def quiet_retry_warnings() -> None:
    with _filter_installed:
        for name in ("urllib3.connectionpool", "mlflow.utils.rest_utils"):
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)


def client(uri: str) -> MlflowClient:
    """A client on ``uri``; credentials in it go to the environment, never to MLflow's lines."""
    from .credentials import for_mlflow
    from .local_store import ready

    clean = for_mlflow(uri)  # a URI no client can read as meant is refused, not retried
    return call(lambda: MlflowClient(tracking_uri=ready(clean)))


def resolve_experiment(c: MlflowClient, name: str | None, experiment_id: str | None) -> str:
    """The experiment id a run goes into: the given id, the named one (created if missing, as a
    training experiment), or MLflow's default experiment; one without a kind gets the training
    kind (:func:`mark_training`)."""
    if experiment_id or not name:
        from mlflow.tracking.default_experiment import DEFAULT_EXPERIMENT_ID

        experiment_id = experiment_id or DEFAULT_EXPERIMENT_ID
        mark_training(c, experiment_id)
        return experiment_id
    found = call(c.get_experiment_by_name, name)
    if found is not None and found.lifecycle_stage == "deleted":
        raise Rejected(
            f"experiment {name!r} is deleted; restore it (`mlflow experiments restore`) or delete "
            "it permanently to create a new one under that name"
        )
    if found is None:
        try:
            return call(
                c.create_experiment,
                name,
                tags={layout.MLFLOW_EXPERIMENT_KIND: layout.EXPERIMENT_KIND_TRAINING},
            )
        except Rejected:  # created concurrently by another process: read it back
            found = call(c.get_experiment_by_name, name)
            if found is None:
                raise
    mark_training(c, found.experiment_id, found)
    return found.experiment_id


def mark_training(c: MlflowClient, experiment_id: str, experiment: Any = None) -> None:
    """Give the experiment MLflow's training kind where it has no kind yet, so the UI opens it on
    its runs table; a kind someone set stays. Best effort: a store that refuses or does not answer
    costs the UI its guess, never the run its data (the run's own calls report the outage)."""
    try:
        if experiment is None:
            experiment = call(c.get_experiment, experiment_id)
        if layout.MLFLOW_EXPERIMENT_KIND not in (experiment.tags or {}):
            call(
                c.set_experiment_tag,
                experiment_id,
                layout.MLFLOW_EXPERIMENT_KIND,
                layout.EXPERIMENT_KIND_TRAINING,
            )
    except (Rejected, Unreachable) as exc:
        _log.debug("experiment kind not set: %s", exc)


def mark_run_experiment_training(c: MlflowClient, run_id: str) -> None:
    """:func:`mark_training` for the experiment of a run someone else created (a plain
    ``mlflow.start_run``, a trainer's logger) that a fingerprint joins."""
    try:
        experiment_id = call(c.get_run, run_id).info.experiment_id
    except (Rejected, Unreachable) as exc:
        _log.debug("experiment kind not set: %s", exc)
        return
    mark_training(c, experiment_id)


def create_run(
    c: MlflowClient,
    experiment_id: str,
    run_name: str | None,
    tags: Mapping[str, str],
    start_time: int,
) -> Any:
    return call(
        c.create_run, experiment_id, start_time=start_time, tags=dict(tags), run_name=run_name
    )


def _fluent_stacks() -> list[list[Any]]:
    """Every thread's stack of fluent (``mlflow.start_run``) runs, across MLflow versions."""
    from mlflow.tracking import fluent

    stack = getattr(fluent, "_active_run_stack", None)
    if stack is None:
        return []
    if hasattr(stack, "get_all_thread_values"):
        return list(stack.get_all_thread_values().values())
    return [stack] if isinstance(stack, list) else []


def _this_thread_stack() -> list[Any] | None:
    from mlflow.tracking import fluent

    stack = getattr(fluent, "_active_run_stack", None)
    if stack is not None and hasattr(stack, "get"):
        return stack.get()
    return stack if isinstance(stack, list) else None


def find_in_process(spool_id: str) -> str | None:
    """The run tagged with ``spool_id`` among runs this process started with ``mlflow.start_run``
    and has not ended: a scan of MLflow's in-memory run stacks, no request."""
    for stack in _fluent_stacks():
        for run in list(stack):
            if run.data.tags.get(layout.INTERNAL_SPOOL_ID) == spool_id:
                return run.info.run_id
    return None


def search_run(c: MlflowClient, spool_id: str, tag: str = layout.INTERNAL_SPOOL_ID) -> str | None:
    """The run tagged with ``spool_id`` (under ``tag``), by a tag search over every experiment."""
    ids = [e.experiment_id for e in call(c.search_experiments, max_results=1000)]
    for part in chunks(ids, 100):
        runs = call(
            c.search_runs,
            list(part),
            filter_string=f"tags.`{tag}` = '{spool_id}'",
            max_results=1,
        )
        if runs:
            return runs[0].info.run_id
    return None


def log_batch(
    c: MlflowClient,
    run_id: str,
    metrics: Sequence[events.Metric] = (),
    params: Mapping[str, str] | None = None,
    tags: Mapping[str, str] | None = None,
) -> None:
    """One ``log_batch`` call; the caller keeps within MLflow's per-batch limits."""
    call(
        c.log_batch,
        run_id,
        metrics=[Metric(m.key, m.value, m.timestamp, m.step or 0) for m in metrics],
        params=[Param(k, str(v)) for k, v in (params or {}).items()],
        tags=[RunTag(k, str(v)) for k, v in (tags or {}).items()],
    )


def log_artifact(c: MlflowClient, run_id: str, local_path: str, artifact_path: str) -> None:
    call(c.log_artifact, run_id, local_path, artifact_path)


def set_terminated(c: MlflowClient, run_id: str, status: str, end_time: int) -> None:
    call(c.set_terminated, run_id, status=status, end_time=end_time)


def chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def fluent_attach(run: Any) -> NestingHook | None:
    """Make ``run`` this thread's active fluent run, as ``mlflow.start_run`` would, so the user's
    own ``mlflow.log_*`` calls inside train() land in it. Done without a network call (the run was
    created by the uploader). Returns the hook that :func:`fluent_detach` takes off again; None
    where this MLflow keeps its run stack elsewhere.

    While it is attached, a plain ``mlflow.start_run()`` inside train() opens a child run nested
    under it (:class:`NestingHook`), as the same code does under any outer ``start_run``."""
    stack = _this_thread_stack()
    if stack is None:
        return None
    hook = NestingHook.install(run.info.run_id)
    stack.append(mlflow.ActiveRun(run))
    return hook


_NESTED_POSITION = 3  # start_run(run_id, experiment_id, run_name, nested, ...)
_SWAP = threading.Lock()  # one install or removal of a hook at a time


@dataclass(eq=False)
class NestingHook:
    """``mlflow.start_run`` for as long as one decorated run is attached: a new run started (no
    ``run_id``) while that run tops this thread's stack is nested under it; undecorated, the same
    ``with mlflow.start_run():`` works, and a decorator must not break it. Anything else (another
    active run, an explicit ``nested=``/``run_id``) goes to the function it replaced: MLflow's
    own, or the hook of another decorated run still attached (in another thread, or outside this
    one). The child goes into its parent's experiment unless one is named.

    Scoped and reversible: :meth:`remove` puts back the function it replaced as soon as the run
    is detached, so MLflow's own ``start_run`` is back once no decorated run is attached. A hook
    removed while a later one still sits above it (runs ended out of order, in two threads) only
    stops acting; the later one's removal then skips it. The hook keeps its run id itself: no
    list of runs or of replaced functions lives in this module."""

    run_id: str
    replaced: Callable[..., Any]
    active: bool = True
    function: Callable[..., Any] | None = None

    @classmethod
    def install(cls, run_id: str) -> NestingHook:
        from mlflow.tracking import fluent

        with _SWAP:
            hook = cls(run_id, fluent.start_run)

            def start_run(*args: Any, **kwargs: Any) -> Any:
                return hook(*args, **kwargs)

            functools.update_wrapper(start_run, hook.replaced)
            start_run.__mfp_hook__ = hook  # type: ignore[attr-defined]
            hook.function = start_run
            fluent.start_run = mlflow.start_run = start_run
        return hook

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        stack = _this_thread_stack()
        resumes = kwargs.get("run_id") is not None or (args and args[0] is not None)
        explicit = "nested" in kwargs or len(args) > _NESTED_POSITION
        ours = self.active and stack and stack[-1].info.run_id == self.run_id
        if ours and stack and not resumes and not explicit:  # ours holds only with a stack
            kwargs["nested"] = True
            if len(args) < 2 and kwargs.get("experiment_id") is None:  # shows under its parent
                kwargs["experiment_id"] = stack[-1].info.experiment_id
        return self.replaced(*args, **kwargs)

    def remove(self) -> None:
        """Stop acting; where this hook is the current ``mlflow.start_run``, put back the
        function it replaced (past any hook below that was removed already)."""
        from mlflow.tracking import fluent

        with _SWAP:
            self.active = False
            if fluent.start_run is not self.function:
                return
            replaced = self.replaced
            while (
                below := getattr(replaced, "__mfp_hook__", None)
            ) is not None and not below.active:
                replaced = below.replaced
            fluent.start_run = mlflow.start_run = replaced


def fluent_detach(hook: NestingHook) -> None:
    """Take the hook's run off this thread's fluent stack without ``end_run`` (which would set the
    status over the network on the training thread: the uploader does that), leave it as
    ``mlflow.last_active_run()``, as ``end_run`` would, and remove the hook."""
    from mlflow.tracking import fluent

    hook.remove()
    stack = _this_thread_stack()
    if stack and stack[-1].info.run_id == hook.run_id:
        stack.pop()
    last = getattr(fluent, "_last_active_run_id", None)
    if last is not None and hasattr(last, "set"):
        last.set(hook.run_id)
