"""A stateful Slack fake: the Web API methods Centrality calls, answering as Slack does.

It keeps channels (by name and id), their messages and threads, and each message's versions
(`chat.update` edits it in place), so a test or the demo reads what Slack was told and what
people see now. It decides what Slack would accept, never the notifier:

- `chat.postMessage`: a channel the workspace lacks is `channel_not_found`, one the bot is not
  in `not_in_channel`; a `thread_ts` that is not a message of the channel's top level is
  `invalid_thread_ts`; the message is checked as `centrality.slack_limits` says (Block Kit
  through slack_sdk's models, 50 blocks, the text limits); one message per second per channel
  (docs.slack.dev/apis/web-api/rate-limits: "Posting messages: 1 per second", short bursts
  tolerated without guarantee: the fake tolerates none), beyond which HTTP 429 with an integer
  `Retry-After` and `ratelimited`;
- `chat.update`: a `ts` the channel lacks is `message_not_found`; the same checks; Tier 3 (50+
  per minute, docs.slack.dev/reference/methods/chat.update): 50 a minute per workspace, then 429.

Time is `clock` (monotonic seconds), injectable so a test moves it by hand. `down` answers 503
to everything, as during a Slack outage.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs

from centrality.local_http import LocalServer, QuietHandler
from centrality.slack_limits import Refused, check_message

POST_INTERVAL_S = 1.0
UPDATES_PER_MINUTE = 50
Answer = tuple[int, dict[str, str], dict[str, Any]]


@dataclass(frozen=True)
class Version:
    text: str
    blocks: list[dict[str, Any]]
    at: float  # the fake's clock


@dataclass
class Message:
    channel: str  # the channel's id
    ts: str
    thread_ts: str | None  # a reply's parent
    versions: list[Version]
    replies: list[str] = field(default_factory=list)  # a parent's replies' ts, in order

    @property
    def text(self) -> str:
        return self.versions[-1].text

    @property
    def blocks(self) -> list[dict[str, Any]]:
        return self.versions[-1].blocks

    @property
    def edits(self) -> int:
        return len(self.versions) - 1


@dataclass
class Channel:
    id: str
    name: str
    member: bool = True  # whether the bot is in it
    messages: dict[str, Message] = field(default_factory=dict)  # by ts, in the order posted
    last_post_at: float | None = None

    def top(self) -> list[Message]:
        """The channel's top-level messages (thread parents among them), oldest first."""
        return [m for m in self.messages.values() if m.thread_ts is None]

    def thread(self, ts: str) -> list[Message]:
        """A parent and its replies, in order."""
        parent = self.messages[ts]
        return [parent, *(self.messages[r] for r in parent.replies)]


@dataclass
class SlackFake(LocalServer):
    channels: tuple[str, ...] = ("gpu-incidents",)  # the channels the bot is in, at the start
    clock: Callable[[], float] = time.monotonic
    down: bool = False
    posts: list[dict[str, Any]] = field(default_factory=list)  # each accepted post's arguments
    refusals: list[tuple[str, str]] = field(default_factory=list)  # (method, error), in order
    tokens: list[str] = field(default_factory=list)
    last_call_at: float | None = None  # the clock at the latest call, answered or not
    _server: ThreadingHTTPServer | None = None
    _by_id: dict[str, Channel] = field(default_factory=dict)
    _updates: deque[float] = field(default_factory=deque)
    _ts: int = 0
    _lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        for name in self.channels:
            self.add_channel(name)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    @property
    def rejected(self) -> int:
        return len(self.refusals)

    def add_channel(self, name: str, *, member: bool = True) -> Channel:
        with self._lock:
            channel = Channel(f"C{len(self._by_id) + 1:08d}", name.lstrip("#"), member)
            self._by_id[channel.id] = channel
            return channel

    def channel(self, name_or_id: str) -> Channel:
        found = self._find(name_or_id)
        if found is None:
            raise KeyError(f"no channel {name_or_id}")
        return found

    def quiet_for(self, seconds: float) -> bool:
        """Whether no call came for `seconds`: whoever posts has told all it had."""
        return self.last_call_at is None or self.clock() - self.last_call_at >= seconds

    def wait_quiet(
        self, seconds: float, timeout_s: float, check: Callable[[], object] = lambda: None
    ) -> None:
        """Until no call came for `seconds` (at most `timeout_s`, real time): a notifier keeping
        Slack's pace, a message a second, may tell its last ones well after what it told of
        happened. `check` is called between polls (a caller's way to fail early)."""
        deadline = time.monotonic() + timeout_s
        while not self.quiet_for(seconds) and time.monotonic() < deadline:
            check()
            time.sleep(0.5)

    def threads(self) -> list[tuple[Channel, list[Message]]]:
        """Every thread (a top-level message and its replies), channel by channel, oldest first:
        what people scrolling the channels see now."""
        with self._lock:
            return [(c, c.thread(m.ts)) for c in self._by_id.values() for m in c.top()]

    def __enter__(self) -> Self:
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                status, headers, answer = fake.answer(self.path, self.headers, body)
                raw = json.dumps(answer).encode()
                self.send_response(status)
                for name, value in {**headers, "Content-Type": "application/json"}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.serve(Handler)
        return self

    def answer(self, path: str, headers: Any, body: str) -> Answer:
        """Slack's answer to one call: HTTP status, headers, JSON body."""
        method = path.rstrip("/").rsplit("/", 1)[-1]
        with self._lock:
            self.last_call_at = self.clock()
            status, out_headers, answer = self._answer(method, headers, body)
            if not answer.get("ok"):
                self.refusals.append((method, str(answer.get("error"))))
            return status, out_headers, answer

    def _answer(self, method: str, headers: Any, body: str) -> Answer:
        if self.down:
            return 503, {}, {"ok": False, "error": "service_unavailable"}
        token = headers.get("Authorization", "")
        self.tokens.append(token)
        if not token.startswith("Bearer "):
            return 200, {}, {"ok": False, "error": "not_authed"}
        args = _arguments(headers, body)
        calls = {"chat.postMessage": self._post, "chat.update": self._update}
        if method not in calls:
            return 200, {}, {"ok": False, "error": "unknown_method"}
        try:
            return calls[method](args)
        except Refused as refused:
            answer: dict[str, Any] = {"ok": False, "error": refused.error}
            if refused.details:
                answer["errors"] = refused.details
            return 200, {}, answer
        except _RateLimited as limited:
            headers_out = {"Retry-After": str(limited.retry_after_s)}
            return 429, headers_out, {"ok": False, "error": "ratelimited"}

    def _post(self, args: dict[str, Any]) -> Answer:
        channel = self._member(args.get("channel"))
        thread_ts = args.get("thread_ts") or None
        if thread_ts is not None:
            parent = channel.messages.get(str(thread_ts))
            if parent is None or parent.thread_ts is not None:
                raise Refused("invalid_thread_ts")
        check_message(args.get("text"), args.get("blocks"))
        now = self.clock()
        if channel.last_post_at is not None and now < channel.last_post_at + POST_INTERVAL_S:
            raise _RateLimited(channel.last_post_at + POST_INTERVAL_S - now)
        channel.last_post_at = now
        self._ts += 1
        ts = f"1700000000.{self._ts:06d}"
        version = Version(str(args.get("text") or ""), list(args.get("blocks") or []), now)
        channel.messages[ts] = Message(channel.id, ts, thread_ts, [version])
        if thread_ts is not None:
            channel.messages[thread_ts].replies.append(ts)
        self.posts.append({**args, "ts": ts})
        return 200, {}, {"ok": True, "channel": channel.id, "ts": ts}

    def _update(self, args: dict[str, Any]) -> Answer:
        channel = self._member(args.get("channel"))
        message = channel.messages.get(str(args.get("ts")))
        if message is None:
            raise Refused("message_not_found")
        check_message(args.get("text"), args.get("blocks"))
        now = self.clock()
        while self._updates and self._updates[0] <= now - 60.0:
            self._updates.popleft()
        if len(self._updates) >= UPDATES_PER_MINUTE:
            raise _RateLimited(self._updates[0] + 60.0 - now)
        self._updates.append(now)
        blocks = args.get("blocks")
        message.versions.append(
            Version(
                str(args.get("text") or ""),
                message.blocks if blocks is None else list(blocks),  # none given: kept
                now,
            )
        )
        return 200, {}, {"ok": True, "channel": channel.id, "ts": message.ts}

    def _member(self, name_or_id: Any) -> Channel:
        channel = self._find(str(name_or_id or ""))
        if channel is None:
            raise Refused("channel_not_found")
        if not channel.member:
            raise Refused("not_in_channel")
        return channel

    def _find(self, name_or_id: str) -> Channel | None:
        with self._lock:
            if name_or_id in self._by_id:
                return self._by_id[name_or_id]
            name = name_or_id.lstrip("#")
            return next((c for c in self._by_id.values() if c.name == name), None)


class _RateLimited(Exception):
    def __init__(self, wait_s: float) -> None:
        super().__init__("ratelimited")
        self.retry_after_s = max(1, math.ceil(wait_s))  # Slack says whole seconds


def _arguments(headers: Any, body: str) -> dict[str, Any]:
    if "json" in headers.get("Content-Type", ""):
        return dict(json.loads(body or "{}"))
    args: dict[str, Any] = {k: v[0] for k, v in parse_qs(body).items()}
    if isinstance(args.get("blocks"), str):
        args["blocks"] = json.loads(args["blocks"])
    return args
