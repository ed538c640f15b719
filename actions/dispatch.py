"""One trigger's way through the worker: ledger → authority → allowlist → silences → batch →
breaker → handler (or its plan).

A decision of a rule in shadow mode (`payload.shadow`) is only ever planned, as in dry-run mode
whatever this worker's own mode: its results say `shadow` (and `dry_run`, which every consumer
already takes as nothing done), the plan shows the calls it would have made, and a silence or a
breaker that would have stopped it says so. Nothing is called, nobody is told.

An operator's command (`payload.operator`) is never held by a silence, and `force` passes the
breaker (recorded in the result as forced, with what the breaker said). Whatever is refused or
held is told to people with the reason, whichever the action. A batched drain (a big job's
suspects) waits for room in its batch (`actions.batches`); a command or a plan never waits.

Kafka-free, so the policy is the same in the worker and in tests: results go to `emit`, records to
the ledger, notifications to the notifier.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import structlog
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential_jitter,
)

import actions.handlers  # noqa: F401  (registers the built-in handlers)
from actions.adapters.base import SchedulerAdapter
from actions.batches import Batches, Park, batch_of, unparked
from actions.benchmark.baseline import BaselineSource, no_history
from actions.bounds import bounded_detail, bounded_text
from actions.context import ActionContext
from actions.dryrun import Plan, PlanningAdapter, PlanningNotifier, PlanningWebhook
from actions.errors import TemporaryError
from actions.fleet import FleetSizes, ObservedFleet
from actions.ledger import Ledger, LedgerEntry, Outcome
from actions.registry import HandlerSpec, handler_for
from actions.settings import ActionsSettings
from actions.silences import Silence, Silences
from actions.slack.blocks import incident_message
from actions.slack.message import Message
from actions.slack.notifier import Notifier
from actions.threads import in_thread
from actions.webhook import Webhook, make_webhook
from schemas.envelope import Event, utcnow
from schemas.events import (
    ActionFailed,
    ActionHeld,
    ActionStarted,
    ActionSucceeded,
    BenchmarkCompleted,
    Trigger,
)
from schemas.events.incidents import told_by_incident
from schemas.runtime import tracing
from schemas.runtime.fleet import FleetReader
from schemas.runtime.metrics.catalog import ACTIONS, BREAKER_REFUSALS

log = structlog.get_logger("actions")

Emit = Callable[[Event], Awaitable[None]]


def incident_of(trigger: Trigger) -> str:
    """Messages of one incident share a Slack thread; without an explicit one, the subject's."""
    return getattr(trigger.payload, "incident", None) or f"{trigger.cluster}/{trigger.subject}"


class Dispatcher:
    def __init__(
        self,
        settings: ActionsSettings,
        adapter: SchedulerAdapter,
        notifier: Notifier,
        ledger: Ledger,
        emit: Emit,
        clock: Callable[[], datetime] = utcnow,
        fleet: ObservedFleet | None = None,
        silences: Silences | None = None,
        webhook: Webhook | None = None,
        baselines: BaselineSource = no_history,
        statuses: FleetReader | None = None,
        park: Park = unparked,
    ) -> None:
        self.settings = settings
        self.adapter = adapter
        self.notifier = notifier
        self.ledger = ledger
        self.emit = emit
        self.clock = clock
        # Without a watcher (tests, one-off runs) only configured fleet sizes count.
        self.fleets = FleetSizes(
            settings.fleet_size,
            fleet or ObservedFleet(settings.fleet_window_s),
            statuses.fleet if statuses is not None else None,
        )
        self.statuses = statuses
        self.silences = silences or Silences({})
        self.webhook = webhook or make_webhook()
        self.baselines = baselines
        self.park = park
        self.batches = Batches(
            lambda: self.ledger.history(planned=False),
            self.ledger.refresh,
            clock,
            settings.batch_hold_s,
            settings.batch_poll_s,
        )

    async def handle(self, trigger: Trigger, *, refusal: str | None = None) -> None:
        """Act on `trigger`, or record why not; `refusal`: the worker found the trigger's author
        without authority for it (an operator and a cluster they may not command)."""
        with tracing.span(
            f"action {trigger.type}",
            lambda: {
                "centrality.trigger.type": trigger.type,
                "centrality.trigger.id": str(trigger.event_id),
                "centrality.cluster": trigger.cluster,
                "centrality.subject": trigger.subject,
            },
        ):
            await self._handle(trigger, refusal)

    async def _handle(self, trigger: Trigger, refusal: str | None) -> None:
        spec = handler_for(trigger)
        if spec is None:
            log.info("no_handler", type=trigger.type, id=str(trigger.event_id))
            return
        ctx = self._context(trigger)
        prior = self.ledger.get(trigger.event_id)
        if prior is not None and prior.blocks(dry_run=ctx.dry_run):
            if prior.outcome == "started" and not ctx.dry_run:
                why = "in doubt: a worker started this action and stopped before recording it"
                await self._refuse(spec, trigger, ctx, why, notify=True, outcome="failed")
            else:
                log.info("duplicate_trigger", id=str(trigger.event_id), outcome=prior.outcome)
                ACTIONS.labels(spec.name, "duplicate").inc()
            return
        if refusal is not None:
            await self._refuse(spec, trigger, ctx, refusal, notify=True)
            return
        if not self.settings.allows(trigger.cluster, spec.name):
            why = f"action {spec.name} is not enabled on cluster {trigger.cluster}"
            await self._refuse(spec, trigger, ctx, why, notify=True)
            return
        if (silence := await self._silenced(spec, trigger)) is not None:
            await self._held(spec, trigger, ctx, silence)
            return
        if not ctx.dry_run and trigger.payload.operator is None:
            await self.batches.turn(trigger, self.park)
        with self.batches.admitted(trigger):
            if tripped := await self._tripped(spec, trigger):
                if not trigger.payload.force:
                    BREAKER_REFUSALS.labels(spec.name).inc()
                    why = f"circuit breaker: {tripped}"
                    await self._refuse(spec, trigger, ctx, why, notify=True)
                    return
                ctx.forced = f"circuit breaker passed by force: {tripped}"
            await self._act(spec, trigger, ctx)

    async def _silenced(self, spec: HandlerSpec, trigger: Trigger) -> Silence | None:
        """The silence holding a rule's decision now; read again first, since an operator may
        have set one a moment ago (a silence that cannot be read again holds as known)."""
        if trigger.payload.operator is not None:
            return None
        try:
            await self.silences.refresh()
        except Exception as exc:
            log.warning("silences_refresh_failed", error=f"{type(exc).__name__}: {exc}")
        return self.silences.holding(trigger, spec.name, self.clock())

    async def _tripped(self, spec: HandlerSpec, trigger: Trigger) -> str | None:
        guard = spec.guard
        if guard is None:
            return None

        def check() -> str | None:
            history = self.ledger.history(planned=self.settings.dry_run)
            return guard(trigger, history, self.settings, self.clock(), self.fleets)

        if self.statuses is not None:  # node groups: their nodes as the streams app knows now
            try:
                await self.statuses.refresh()
            except Exception as exc:  # unread, the groups keep the nodes known so far
                log.warning("statuses_refresh_failed", error=f"{type(exc).__name__}: {exc}")

        tripped = check()
        if tripped is not None:
            # Triggers and the ledger are not co-partitioned: another worker may have acted
            # (drained, released) since this one read the ledger. Read again before refusing.
            try:
                await self.ledger.refresh()
            except Exception as exc:  # unread, the ledger still holds what this worker knows
                log.warning("ledger_refresh_failed", error=f"{type(exc).__name__}: {exc}")
                return tripped
            tripped = check()
        return tripped

    def _context(self, trigger: Trigger) -> ActionContext:
        incident = incident_of(trigger)
        if not (self.settings.dry_run or trigger.payload.shadow):
            self.notifier.bind()  # handlers post from threads of their own
            adapter = tracing.traced(self.adapter, f"adapter {self.adapter.name}")
            return ActionContext(
                adapter,
                self.notifier,
                self.settings,
                incident,
                webhook=self.webhook,
                baselines=self.baselines,
            )
        plan = Plan()
        return ActionContext(
            PlanningAdapter(plan),
            PlanningNotifier(plan),
            self.settings,
            incident,
            dry_run=True,
            webhook=PlanningWebhook(plan),
        )

    async def _act(self, spec: HandlerSpec, trigger: Trigger, ctx: ActionContext) -> None:
        """Attempts with jittered backoff while the handler says temporary (a timeout is).

        A call past its timeout goes on in its thread: the next attempt starts only once it has
        ended, so an action never runs twice at once; if it still runs when the backoff is over,
        the action ends as a temporary failure instead.
        """
        if not ctx.dry_run:
            await self._record(spec, trigger, ctx, "started", 0)
        timeout_s = self.settings.timeouts_s.get(spec.name, spec.timeout_s)
        backoff_s = spec.backoff_s * self.settings.backoff_scale
        call: asyncio.Future[dict[str, Any]] | None = None
        attempt = 0
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(TemporaryError),
            stop=stop_after_attempt(spec.retries + 1),
            wait=wait_exponential_jitter(initial=backoff_s, jitter=backoff_s),
            before_sleep=_log_retry(spec),
            reraise=True,
        )
        try:
            async for trying in retrying:
                with trying:
                    attempt = trying.retry_state.attempt_number
                    if call is not None and not call.done():
                        raise CallStillRunning(
                            f"timed out after {timeout_s:g}s and still running: not tried again"
                        )
                    await self.emit(self._result(ActionStarted, spec, trigger, ctx, attempt))
                    ctx.outbox.clear()
                    call = in_thread(spec.fn, trigger, ctx)
                    try:
                        detail = await asyncio.wait_for(asyncio.shield(call), timeout_s)
                    except TimeoutError:
                        raise TemporaryError(f"timed out after {timeout_s:g}s") from None
        except (TemporaryError, CallStillRunning) as exc:
            return await self._failed(spec, trigger, ctx, attempt, exc, permanent=False)
        except Exception as exc:  # PermanentError, or a bug: retrying blindly could harm
            return await self._failed(spec, trigger, ctx, attempt, exc, permanent=True)
        return await self._succeeded(spec, trigger, ctx, attempt, detail)

    async def _succeeded(
        self,
        spec: HandlerSpec,
        trigger: Trigger,
        ctx: ActionContext,
        attempt: int,
        detail: dict[str, Any],
    ) -> None:
        if ctx.dry_run:
            assert isinstance(ctx.adapter, PlanningAdapter)
            detail = {"planned": ctx.adapter.plan.calls, "returned": detail}
        if ctx.forced is not None:
            detail = {**detail, "forced": ctx.forced}
        for event in ctx.outbox:
            await self.emit(event)
        if spec.name in self.settings.notify_on_success and not ctx.dry_run:
            benchmarks = [e.payload for e in ctx.outbox if isinstance(e, BenchmarkCompleted)]
            message = incident_message(
                trigger,
                headline=spec.headline(trigger, succeeded=True),
                line=spec.line(trigger, succeeded=True),
                done=detail,
                benchmarks=benchmarks,
            )
            detail = {**detail, "notified": await self._notify(ctx, trigger, message)}
        log.info("action_succeeded", action=spec.name, subject=trigger.subject, dry_run=ctx.dry_run)
        tracing.annotate({"centrality.action": spec.name, "centrality.outcome": "succeeded"})
        await self.emit(self._result(ActionSucceeded, spec, trigger, ctx, attempt, detail=detail))
        await self._record(spec, trigger, ctx, "succeeded", attempt, detail=detail)
        planned = "shadow" if trigger.payload.shadow else "planned"
        ACTIONS.labels(spec.name, planned if ctx.dry_run else "succeeded").inc()

    async def _failed(
        self,
        spec: HandlerSpec,
        trigger: Trigger,
        ctx: ActionContext,
        attempt: int,
        exc: Exception,
        *,
        permanent: bool,
    ) -> None:
        error = f"{type(exc).__name__}: {exc}"
        log.error("action_failed", action=spec.name, error=error, permanent=permanent)
        tracing.annotate({"centrality.action": spec.name, "centrality.outcome": "failed"})
        message = incident_message(
            trigger,
            headline=spec.headline(trigger, succeeded=False),
            line=spec.line(trigger, succeeded=False),
            error=error,
        )
        notified = await self._notify(ctx, trigger, message)
        await self.emit(
            self._result(
                ActionFailed, spec, trigger, ctx, attempt, error=error, permanent=permanent
            )
        )
        await self._record(
            spec, trigger, ctx, "failed", attempt, error=error, detail={"notified": notified}
        )
        ACTIONS.labels(spec.name, "failed").inc()

    async def _refuse(
        self,
        spec: HandlerSpec,
        trigger: Trigger,
        ctx: ActionContext,
        why: str,
        *,
        notify: bool,
        outcome: Outcome = "skipped",
    ) -> None:
        """Not acting is recorded like acting: an ActionFailed with the reason, maybe a message."""
        log.warning("action_refused", action=spec.name, id=str(trigger.event_id), why=why)
        tracing.annotate(
            {"centrality.action": spec.name, "centrality.outcome": outcome, "centrality.why": why}
        )
        detail: dict[str, Any] = {}
        refused = outcome == "skipped"  # in doubt, it may have acted: that is no refusal
        if notify:
            message = incident_message(
                trigger,
                headline=spec.headline(trigger, succeeded=False),
                line=spec.line(trigger, succeeded=False),
                error=why,
                refused=refused,
            )
            detail["notified"] = await self._notify(ctx, trigger, message)
        await self.emit(
            self._result(
                ActionFailed, spec, trigger, ctx, 1, error=why, permanent=True, refused=refused
            )
        )
        await self._record(spec, trigger, ctx, outcome, 0, error=why, detail=detail)
        ACTIONS.labels(spec.name, "refused" if refused else "in_doubt").inc()

    async def _held(
        self, spec: HandlerSpec, trigger: Trigger, ctx: ActionContext, silence: Silence
    ) -> None:
        """A silence holds a rule's decision: recorded as held (its own result, no failure) and
        told once; rules decide afresh after the silence."""
        why = silence.words()
        log.info(
            "action_held", action=spec.name, id=str(trigger.event_id), silence=silence.silence_id
        )
        tracing.annotate({"centrality.action": spec.name, "centrality.outcome": "held"})
        message = incident_message(
            trigger,
            headline=spec.headline(trigger, succeeded=False),
            line=spec.line(trigger, succeeded=False),
            error=why,
            held=True,
        )
        detail = {"notified": await self._notify(ctx, trigger, message)}
        held = {"held_by": silence.silence_id, "until": silence.ends_at, "why": silence.said()}
        await self.emit(self._result(ActionHeld, spec, trigger, ctx, 1, **held))
        await self._record(
            spec, trigger, ctx, "held", 0, error=why, detail=detail, held_by=silence.silence_id
        )
        ACTIONS.labels(spec.name, "held").inc()

    async def _notify(
        self, ctx: ActionContext, trigger: Trigger, message: Message
    ) -> dict[str, Any]:
        """Queued, never awaited: a slow or absent Slack must not hold up an action or its
        record. In shadow mode the plan records it at once. A rule's decision about nodes is
        told through their incident (the teller), not message by message."""
        if told_by_incident(trigger):
            return {"told": "incident"}
        if ctx.dry_run:
            return ctx.notifier.post(ctx.incident, message)
        return self.notifier.submit(ctx.incident, message)

    async def _record(
        self,
        spec: HandlerSpec,
        trigger: Trigger,
        ctx: ActionContext,
        outcome: Outcome,
        attempts: int,
        *,
        detail: dict[str, Any] | None = None,
        error: str | None = None,
        held_by: str | None = None,
    ) -> None:
        await self.ledger.record(
            LedgerEntry(
                trigger_id=trigger.event_id,
                trigger_type=trigger.type,
                action=spec.name,
                cluster=trigger.cluster,
                subject=trigger.subject,
                rule=trigger.payload.rule,
                nodes=tuple(getattr(trigger.payload, "nodes", ())),
                outcome="dry_run" if ctx.dry_run else outcome,
                attempts=attempts,
                detail=bounded_detail(detail or {}),
                error=None if error is None else bounded_text(error),
                incident=ctx.incident,
                thread=self.notifier.threads.get(ctx.incident),
                batch=batch.name if (batch := batch_of(trigger)) is not None else None,
                held_by=held_by,
                recorded_at=self.clock(),
            )
        )

    def _result(
        self,
        cls: type[Event],
        spec: HandlerSpec,
        trigger: Trigger,
        ctx: ActionContext,
        attempt: int,
        **payload: Any,
    ) -> Event:
        if "error" in payload:
            payload["error"] = bounded_text(payload["error"])
        if "detail" in payload:
            payload["detail"] = bounded_detail(payload["detail"])
        return cls.model_validate(
            {
                "source": self.settings.source,
                "cluster": trigger.cluster,
                "subject": trigger.subject,
                "occurred_at": utcnow(),
                "payload": {
                    "trigger_id": trigger.event_id,
                    "trigger_type": trigger.type,
                    "action": spec.name,
                    "attempt": attempt,
                    "dry_run": ctx.dry_run,
                    "shadow": trigger.payload.shadow,
                    "nodes": tuple(getattr(trigger.payload, "nodes", ())),
                    "jobs": tuple(getattr(trigger.payload, "jobs", ())),
                    "move_jobs": getattr(trigger.payload, "move_jobs", False),
                    "operator": trigger.payload.operator,
                    "reason": bounded_text(trigger.payload.reason),
                    "decided_at": trigger.occurred_at,
                    "forced": ctx.forced is not None,
                    **payload,
                },
            }
        )


class CallStillRunning(Exception):
    """The previous attempt's call outlived its timeout; starting another could double it."""


def _log_retry(spec: HandlerSpec) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        log.warning(
            "action_retry", action=spec.name, attempt=state.attempt_number, error=str(error)
        )

    return before_sleep
