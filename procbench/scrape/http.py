"""The one polite HTTP layer every source uses, for every request kind (pages, APIs, images, robots.txt).

Politeness rules, all enforced here:

* robots.txt of each host is read (``urllib.robotparser`` groups, RFC 9309 longest-match with ``*``/``$``);
  a disallowed URL is counted and never fetched. An unreachable robots.txt (5xx or no answer after retries)
  disallows the host *for now* (RFC 9309 §2.3.1.3): its pages fail as transient, so a later run fetches them.
* one rate limiter per host shared by all request kinds: at least ``min_interval`` seconds (default 1)
  between the end of one request and the start of the next, raised to the host's ``Crawl-delay``;
  ``Retry-After`` pushes the host's next slot back; when 429s keep coming, every host pauses.
* retries only on 408, 429, 5xx, timeouts and connection errors, with exponential backoff and jitter;
  every other failure (404, 403, a redirect off the source's domain, an oversized body) fails at once.
* an identifying User-Agent with a contact, connect/read timeouts, a maximum body size, http(s) only, and
  a total deadline per response (``max_seconds``: a server trickling its headers or body is cut off).
* every final response is kept in a :class:`~procbench.scrape.cache.ResponseCache`, so a re-run or a
  re-parse never asks the site again; permanent failures (404, too large) are remembered too.

Time goes through a :class:`Clock`, so tests run with a fake one and never really sleep.
"""

from __future__ import annotations

import email.utils
import ipaddress
import logging
import random
import re
import socket
import threading
import time
import urllib.robotparser
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

import requests
import urllib3.exceptions
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from procbench import __version__
from procbench.errors import Blocked, Disallowed, FetchError, ParseError, RateLimited
from procbench.scrape.cache import CachedResponse, ResponseCache

__all__ = [
    "AGENT_TOKEN",
    "Clock",
    "HttpClient",
    "HttpConfig",
    "HostUnresponsive",
    "HttpStats",
    "Mirror",
    "NotAnImage",
    "ResponseTooLarge",
    "SystemClock",
    "is_loopback_url",
    "looks_like_image",
    "without_credentials",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The product token robots.txt groups are matched against.
AGENT_TOKEN = "procbench"
_RETRY_STATUSES = frozenset({408, 429})
_TRANSIENT_EXCEPTIONS = (
    requests.exceptions.ConnectionError,
    requests.exceptions.Timeout,
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
)


class Clock(Protocol):
    """Where the HTTP layer reads the time and sleeps (a fake one in tests)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock."""

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds``."""


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class HttpConfig:
    """Politeness and safety settings (defaults follow scrapy's polite defaults and openZIM's incidents)."""

    contact: str | None = None
    user_agent: str | None = None
    min_interval: float = 1.0
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    max_seconds: float = 120.0
    max_bytes: int = 20 * 2**20
    max_retries: int = 4
    backoff_base: float = 2.0
    backoff_max: float = 300.0
    max_retry_after: float = 3600.0
    pause_after_429s: int = 3
    pause_seconds: float = 900.0
    max_redirects: int = 5
    #: Timeouts (connect, read, or the ``max_seconds`` cut-off) one host may cause in a run before every
    #: further request to it fails at once (:class:`HostUnresponsive`): a slow host costs minutes, not hours.
    max_host_timeouts: int = 3
    seed: int = 0

    def agent(self) -> str:
        """The User-Agent header: the configured one, or ``procbench/<version> (...; contact)``."""
        if self.user_agent:
            return self.user_agent
        contact = f"; contact: {self.contact}" if self.contact else ""
        return f"{AGENT_TOKEN}/{__version__} (procedural-benchmark research crawler; obeys robots.txt{contact})"


@dataclass
class HttpStats:
    """What the HTTP layer did in one run."""

    requests: int = 0
    from_cache: int = 0
    retries: int = 0
    robots_disallowed: int = 0
    robots_unavailable: int = 0
    redirects_refused: int = 0
    status_429: int = 0
    global_pauses: int = 0
    bytes: int = 0
    slept_seconds: float = 0.0
    by_kind: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "requests": self.requests,
            "from_cache": self.from_cache,
            "retries": self.retries,
            "robots_disallowed": self.robots_disallowed,
            "robots_unavailable": self.robots_unavailable,
            "redirects_refused": self.redirects_refused,
            "status_429": self.status_429,
            "global_pauses": self.global_pauses,
            "bytes": self.bytes,
            "slept_seconds": round(self.slept_seconds, 3),
            "by_kind": dict(sorted(self.by_kind.items())),
            "by_status": {str(k): v for k, v in sorted(self.by_status.items())},
        }


def is_loopback_url(url: str) -> bool:
    """Whether ``url`` points at this machine (``localhost`` or a loopback address)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Mirror:
    """Points every host of a source (pages, APIs, images) at one base URL, paths unchanged.

    Sources and the store work with canonical URLs (``https://www.wikihow.com/...``); only the request
    that goes out is rewritten, and redirects from the mirror are mapped back.
    """

    base: str
    domains: tuple[str, ...]

    def __post_init__(self) -> None:
        parts = urlsplit(self.base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise FetchError(f"--base-url must be an http(s) URL, got {self.base!r}", url=self.base)

    def covers(self, url: str) -> bool:
        """Whether ``url``'s host belongs to the source (and is therefore served by the mirror)."""
        return _in_domains(urlsplit(url).hostname or "", self.domains)

    def to_fetch(self, url: str) -> str:
        """The URL actually requested for canonical ``url``."""
        if not self.covers(url):
            return url
        base, parts = urlsplit(self.base), urlsplit(url)
        path = base.path.rstrip("/") + (parts.path or "/")
        return urlunsplit((base.scheme, base.netloc, path, parts.query, ""))

    def to_canonical(self, fetched: str, like: str) -> str | None:
        """Map a URL on the mirror back to the canonical host of ``like``; None if it is not on the mirror."""
        base, parts = urlsplit(self.base), urlsplit(fetched)
        if (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
            return None
        prefix = base.path.rstrip("/")
        path = parts.path[len(prefix) :] if prefix and parts.path.startswith(prefix) else parts.path
        canon = urlsplit(like)
        return urlunsplit((canon.scheme, canon.netloc, path or "/", parts.query, ""))


def _in_domains(host: str, domains: tuple[str, ...]) -> bool:
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in domains)


class _RobotFileParser(urllib.robotparser.RobotFileParser):
    """The standard parser with the attributes it sets in ``__init__``/``parse`` declared (typeshed omits them)."""

    allow_all: bool
    disallow_all: bool
    entries: list[Any]
    default_entry: Any


class _Robots:
    """One host's robots.txt: groups parsed by urllib.robotparser, matched by RFC 9309 longest match."""

    def __init__(
        self, text: str | None, *, allow_all: bool = False, disallow_all: bool = False, unavailable: str = ""
    ) -> None:
        self.unavailable = unavailable  # why robots.txt could not be read: every URL is off limits for now
        self.parser = _RobotFileParser()
        if text is not None:
            self.parser.parse(text.splitlines())
        self.parser.allow_all = allow_all
        self.parser.disallow_all = disallow_all

    def crawl_delay(self) -> float:
        if self.parser.allow_all or self.parser.disallow_all:
            return 0.0
        delay = self.parser.crawl_delay(AGENT_TOKEN)
        return float(delay) if delay else 0.0

    def allowed(self, url: str) -> bool:
        rp = self.parser
        if rp.disallow_all:
            return False
        if rp.allow_all:
            return True
        entry = next((e for e in rp.entries if e.applies_to(AGENT_TOKEN)), None) or rp.default_entry
        if entry is None:
            return True
        parts = urlsplit(url)
        target = unquote(parts.path or "/") + (f"?{unquote(parts.query)}" if parts.query else "")
        best: tuple[int, bool] | None = None
        for line in entry.rulelines:
            pattern = unquote(line.path)
            if _robots_match(pattern, target):
                candidate = (len(pattern), bool(line.allowance))
                if best is None or candidate[0] > best[0] or (candidate[0] == best[0] and candidate[1]):
                    best = candidate
        return True if best is None else best[1]


def _robots_match(pattern: str, target: str) -> bool:
    if not pattern:
        return True
    if "*" not in pattern and not pattern.endswith("$"):
        return target.startswith(pattern)
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    regex = ".*".join(re.escape(piece) for piece in body.split("*")) + ("$" if anchored else "")
    return re.match(regex, target) is not None


@dataclass
class _Host:
    next_at: float = 0.0
    interval: float = 1.0
    timeouts: int = 0


class ResponseTooLarge(FetchError):
    """The body is larger than ``HttpConfig.max_bytes`` (permanent, remembered in the cache)."""


class HostUnresponsive(FetchError):
    """The host timed out ``HttpConfig.max_host_timeouts`` times in this run: it is not asked again until the
    next run (transient: nothing is remembered in the cache)."""


class NotAnImage(FetchError):
    """An image request answered with a body that is no image format (HTML, SVG, text): not kept in the cache,
    only the failure is remembered."""


#: Leading bytes of the raster formats Pillow decodes for the store (an image body must start with one).
_IMAGE_SIGNATURES = (
    b"\xff\xd8\xff",  # JPEG
    b"\x89PNG\r\n\x1a\n",
    b"GIF87a",
    b"GIF89a",
    b"BM",
    b"II*\x00",  # TIFF
    b"MM\x00*",
)


def looks_like_image(body: bytes) -> bool:
    """Whether ``body`` starts like a raster image (JPEG, PNG, GIF, WebP, BMP, TIFF, AVIF/HEIF)."""
    if body.startswith(_IMAGE_SIGNATURES):
        return True
    if body[:4] == b"RIFF" and body[8:12] == b"WEBP":
        return True
    return body[4:8] == b"ftyp" and body[8:12] in (b"avif", b"avis", b"heic", b"heix", b"mif1", b"msf1")


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part (never sent, stored in the cache or printed)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rsplit("@", 1)[1], parts.path, parts.query, parts.fragment))


def _origin(url: str) -> tuple[str, int | None]:
    """``(host, port)`` of ``url``, the port made explicit (80 for http, 443 for https)."""
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        return ("", None)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return ((parts.hostname or "").lower().rstrip("."), port if port is not None else default)


class _Transient(Exception):
    def __init__(
        self,
        reason: str,
        *,
        status: int | None = None,
        wait: float | None = None,
        rate_limited: bool = False,
        timeout: bool = False,
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.wait = wait
        self.rate_limited = rate_limited
        self.timeout = timeout


@dataclass
class _Raw:
    status: int
    content_type: str
    body: bytes
    location: str | None


class HttpClient:
    """Polite GETs for one source.

    Args:
        config: politeness settings.
        domains: registrable domains of the source (``("wikihow.com",)``); redirects may not leave them.
        cache: where raw responses are kept (None: no cache).
        mirror: send every request for the source's hosts to a mirror instead.
        clock: time source (a fake one in tests).
        session: a ``requests.Session`` to reuse (one is made otherwise).
        soft_block: byte strings that mark a block page served with status 200 (treated like a 429).
        same_origin: a redirect must stay on the URL's own host and port (http may become https on the
            default ports); otherwise anywhere within ``domains``.
        strict_images: an ``image`` request whose body starts like no raster image fails with
            :class:`NotAnImage` and only the failure is cached, never the body.
    """

    def __init__(
        self,
        config: HttpConfig,
        *,
        domains: tuple[str, ...],
        cache: ResponseCache | None = None,
        mirror: Mirror | None = None,
        clock: Clock | None = None,
        session: requests.Session | None = None,
        soft_block: tuple[bytes, ...] = (),
        same_origin: bool = False,
        strict_images: bool = False,
    ) -> None:
        self.config = config
        self.same_origin = same_origin
        self.strict_images = strict_images
        self.domains = domains
        self.cache = cache
        self.mirror = mirror
        self.clock: Clock = clock or SystemClock()
        self.session = session or requests.Session()
        for prefix in ("http://", "https://"):
            self.session.mount(prefix, _DeadlineAdapter())
        self.soft_block = soft_block
        self.stats = HttpStats()
        self._rng = random.Random(config.seed)
        self._hosts: dict[str, _Host] = {}
        self._robots: dict[str, _Robots] = {}
        self._paused_until = 0.0
        self._consecutive_429 = 0

    # -- public ------------------------------------------------------------------------------------------
    def get(
        self, url: str, *, kind: str = "page", headers: dict[str, str] | None = None, use_cache: bool = True
    ) -> CachedResponse:
        """Fetch canonical ``url`` (from the cache when it has it), following redirects within the domain.

        Raises:
            Disallowed: robots.txt forbids the URL, or a redirect leaves the source's domain.
            Blocked: 401/403.
            RateLimited: 429s (or block pages) after every retry.
            FetchError: any other failure; ``permanent`` says whether a later retry could help.
        """
        url = without_credentials(url)  # requests would send them as Basic auth to whoever answers
        self._check_url(url)
        if use_cache and self.cache is not None:
            hit = self.cache.get(url)
            if hit is not None:
                self.stats.from_cache += 1
                if hit.error is not None:
                    raise FetchError(f"{url}: {hit.error} (remembered in the cache)", url=url, status=hit.status)
                return hit
        current = url
        for _ in range(self.config.max_redirects + 1):
            self._robots_available(current)
            if not self.allowed(current):
                self.stats.robots_disallowed += 1
                raise Disallowed(f"robots.txt disallows {current}", url=current)
            try:
                raw = self._fetch(current, kind=kind, headers=headers)
            except FetchError as exc:
                if isinstance(exc, ResponseTooLarge) or (exc.permanent and exc.status in (404, 410)):
                    self._remember_failure(url, exc)
                raise
            if raw.location is None:
                if kind == "image" and self.strict_images and not looks_like_image(raw.body):
                    failure = NotAnImage(
                        f"{url}: not an image ({raw.content_type or 'no Content-Type'}, {len(raw.body)} bytes)",
                        url=url,
                        status=raw.status,
                    )
                    if use_cache:
                        self._remember_failure(url, failure)  # the failure, never the body
                    raise failure
                response = CachedResponse(
                    url=url,
                    final_url=current,
                    status=raw.status,
                    content_type=raw.content_type,
                    body=raw.body,
                    fetched_at=_utc_now(),
                )
                if use_cache and self.cache is not None:
                    self.cache.put(response)
                return response
            current = self._redirect_target(current, raw.location)
        raise FetchError(f"{url}: more than {self.config.max_redirects} redirects", url=url, status=None)

    def allowed(self, url: str) -> bool:
        """Whether robots.txt of ``url``'s host lets us fetch it (reads robots.txt once per host and run)."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        robots = self._robots.get(origin)
        if robots is None:
            robots = self._load_robots(origin)
            self._robots[origin] = robots
        return robots.allowed(url)

    def get_json(self, url: str, parse: Callable[[Any], T], *, kind: str = "api", **options: Any) -> T:
        """Fetch ``url`` and return ``parse(its JSON)`` (see :meth:`parse_json`)."""
        return self.parse_json(self.get(url, kind=kind, **options), parse)

    def parse_json(self, response: CachedResponse, parse: Callable[[Any], T]) -> T:
        """``parse(response's JSON)``; an answer that is not JSON or that ``parse`` cannot use raises
        :class:`ParseError` and is dropped from the cache, so a re-run asks again instead of trusting it.
        Parse errors that name an expected skip (an ``outcome``, e.g. a collection) keep the answer."""
        url = response.url
        try:
            return parse(response.json())
        except ParseError as exc:
            if getattr(exc, "outcome", "parse_error") != "parse_error":
                raise
            self.forget(url)
            raise ParseError(f"{url}: unusable answer: {exc}") from exc
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
            self.forget(url)
            raise ParseError(f"{url}: unusable answer ({type(exc).__name__}: {exc})") from exc

    def remember_failure(self, url: str, exc: FetchError) -> None:
        """Replace ``url``'s cached response by the failure ``exc`` (the body is dropped; a re-run does not ask
        again and fails the same way)."""
        self.forget(url)
        self._remember_failure(without_credentials(url), exc)

    def forget(self, url: str) -> None:
        """Drop ``url``'s cached response (an answer found unusable is not trusted again)."""
        if self.cache is not None:
            self.cache.drop(without_credentials(url))

    def close(self) -> None:
        """Release the connection pool."""
        self.session.close()

    # -- internals ---------------------------------------------------------------------------------------
    def _robots_available(self, url: str) -> None:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            self._robots[origin] = self._load_robots(origin)
        why = self._robots[origin].unavailable
        if why:
            raise FetchError(
                f"robots.txt of {origin} unavailable ({why}): not fetching {url} for now; re-run later",
                url=url,
                status=503,
                permanent=False,
            )

    def _check_url(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise FetchError(f"only http(s) URLs can be fetched, not {url!r}", url=url)

    def _fetch_url(self, url: str) -> str:
        return self.mirror.to_fetch(url) if self.mirror is not None else url

    def _host(self, fetch_url: str) -> _Host:
        netloc = urlsplit(fetch_url).netloc
        host = self._hosts.get(netloc)
        if host is None:
            host = self._hosts[netloc] = _Host(interval=self.config.min_interval)
        return host

    def _redirect_target(self, current: str, location: str) -> str:
        fetched = urljoin(self._fetch_url(current), location)
        target = fetched
        if self.mirror is not None and urlsplit(fetched).netloc == urlsplit(self.mirror.base).netloc:
            target = self.mirror.to_canonical(fetched, current) or fetched
        elif self.mirror is not None:
            target = ""  # a mirror that redirects anywhere but itself leaves the source
        target = without_credentials(target)
        host = urlsplit(target).hostname or ""
        if self.same_origin and target and not _same_origin(current, target):
            self.stats.redirects_refused += 1
            raise Disallowed(f"{current} redirects to {target}, another host or port; not followed", url=current)
        if not target or urlsplit(target).scheme not in ("http", "https") or not _in_domains(host, self.domains):
            self.stats.redirects_refused += 1
            raise Disallowed(
                f"{current} redirects to {fetched}, outside {', '.join(self.domains)}; not followed", url=current
            )
        return target

    def _remember_failure(self, url: str, exc: FetchError) -> None:
        if self.cache is not None:
            self.cache.put(
                CachedResponse(
                    url=url,
                    final_url=url,
                    status=exc.status or 0,
                    content_type="",
                    body=b"",
                    fetched_at=_utc_now(),
                    error=str(exc),
                )
            )

    def _load_robots(self, origin: str) -> _Robots:
        url = origin + "/robots.txt"
        try:
            raw = self._fetch(url, kind="robots", headers=None, follow=True)
        except Blocked:
            return _Robots(None, disallow_all=True)
        except FetchError as exc:
            if exc.permanent and exc.status is not None and 400 <= exc.status < 500:
                return _Robots(None, allow_all=True)
            self.stats.robots_unavailable += 1
            log.warning("robots.txt of %s unavailable (%s): not fetching from that host in this run", origin, exc)
            return _Robots(None, disallow_all=True, unavailable=str(exc))
        robots = _Robots(raw.body.decode("utf-8", errors="replace"))
        host = self._host(self._fetch_url(url))
        host.interval = max(host.interval, robots.crawl_delay())
        host.next_at = max(host.next_at, self.clock.monotonic() + host.interval)  # the next request waits too
        return robots

    def _fetch(self, url: str, *, kind: str, headers: dict[str, str] | None, follow: bool = False) -> _Raw:
        """One URL with retries; ``follow`` follows redirects within the domain (for robots.txt)."""
        cfg = self.config
        for _hop in range(cfg.max_redirects + 1):
            fetch_url = self._fetch_url(url)
            host = self._host(fetch_url)
            for attempt in range(cfg.max_retries + 1):
                self._give_up_on(host, fetch_url)
                self._wait_turn(host)
                try:
                    raw = self._request_once(fetch_url, kind=kind, headers=headers)
                except FetchError as exc:
                    self._after_request(host)
                    if not exc.permanent and "no complete answer within" in str(exc):  # the max_seconds cut
                        host.timeouts += 1
                    raise
                except _Transient as exc:
                    self._after_request(host)
                    if exc.rate_limited:
                        self._note_429()
                    if exc.timeout:
                        host.timeouts += 1
                        self._give_up_on(host, fetch_url)
                    if attempt == cfg.max_retries:
                        cls = RateLimited if exc.rate_limited else FetchError
                        raise cls(
                            f"{url}: {exc} (gave up after {attempt + 1} tries)",
                            url=url,
                            status=exc.status,
                            permanent=False,
                        ) from None
                    wait = exc.wait if exc.wait is not None else self._backoff(attempt)
                    host.next_at = max(host.next_at, self.clock.monotonic() + wait)
                    self.stats.retries += 1
                    log.info("retrying %s in %.1fs (%s)", url, wait, exc)
                    continue
                self._after_request(host)
                self._consecutive_429 = 0
                break
            if follow and raw.location is not None:
                url = self._redirect_target(url, raw.location)
                continue
            return raw
        raise FetchError(f"{url}: too many redirects", url=url)

    def _request_once(self, fetch_url: str, *, kind: str, headers: dict[str, str] | None) -> _Raw:
        cfg = self.config
        send = {"User-Agent": cfg.agent(), "Accept": _ACCEPT.get(kind, "*/*")}
        if cfg.contact and "@" in cfg.contact:
            send["From"] = cfg.contact
        send.update(headers or {})
        self.stats.requests += 1
        self.stats.by_kind[kind] += 1
        with _Deadline(cfg.max_seconds) as deadline:
            try:
                return self._exchange(fetch_url, send, deadline)
            except (
                _Transient,
                FetchError,
                requests.exceptions.RequestException,
                urllib3.exceptions.HTTPError,
                OSError,
            ):
                if deadline.fired:
                    raise deadline.error(fetch_url) from None
                raise

    def _exchange(self, fetch_url: str, send: dict[str, str], deadline: _Deadline) -> _Raw:
        cfg = self.config
        try:
            response = self.session.get(
                fetch_url,
                headers=send,
                timeout=(cfg.connect_timeout, cfg.read_timeout),
                stream=True,
                allow_redirects=False,
            )
        except _TRANSIENT_EXCEPTIONS as exc:
            raise _Transient(f"{type(exc).__name__}: {exc}", timeout=_is_timeout(exc)) from None
        except requests.exceptions.RequestException as exc:
            raise FetchError(f"{fetch_url}: {exc}", url=fetch_url) from None
        with response:
            status = response.status_code
            self.stats.by_status[status] += 1
            if status == 429 or status in _RETRY_STATUSES or status >= 500:
                retry_after = _retry_after(response.headers.get("Retry-After"))
                if retry_after is not None:
                    retry_after = min(retry_after, cfg.max_retry_after)
                raise _Transient(
                    f"{status} {response.reason}", status=status, wait=retry_after, rate_limited=status == 429
                )
            if status in (301, 302, 303, 307, 308):
                location = response.headers.get("Location")
                if not location:
                    raise FetchError(f"{fetch_url}: redirect without Location", url=fetch_url, status=status)
                return _Raw(status, "", b"", location)
            if status in (401, 403):
                raise Blocked(
                    f"{fetch_url}: {status} {response.reason}; the site refuses us", url=fetch_url, status=status
                )
            if status >= 400 or status < 200 or status >= 300:
                raise FetchError(f"{fetch_url}: {status} {response.reason}", url=fetch_url, status=status)
            body = self._read_body(response, fetch_url)
        if deadline.fired:  # the connection was cut: what was read is not the whole body
            raise deadline.error(fetch_url)
        if any(marker in body for marker in self.soft_block):
            raise _Transient("block page served with status 200", status=200, rate_limited=True)
        self.stats.bytes += len(body)
        return _Raw(status, response.headers.get("Content-Type", ""), body, None)

    def _read_body(self, response: requests.Response, fetch_url: str) -> bytes:
        cfg = self.config
        declared = response.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > cfg.max_bytes:
            raise ResponseTooLarge(
                f"{fetch_url}: body of {declared} bytes exceeds the {cfg.max_bytes}-byte limit",
                url=fetch_url,
                status=200,
            )
        deadline = time.monotonic() + cfg.max_seconds
        chunks: list[bytes] = []
        total = 0
        try:
            for chunk in response.iter_content(chunk_size=65536):
                total += len(chunk)
                if total > cfg.max_bytes:
                    raise ResponseTooLarge(
                        f"{fetch_url}: body exceeds the {cfg.max_bytes}-byte limit", url=fetch_url, status=200
                    )
                if time.monotonic() > deadline:
                    raise _Transient(f"body not complete after {cfg.max_seconds:.0f}s", timeout=True)
                chunks.append(chunk)
        except _TRANSIENT_EXCEPTIONS as exc:
            raise _Transient(f"{type(exc).__name__} while reading: {exc}", timeout=_is_timeout(exc)) from None
        return b"".join(chunks)

    def _give_up_on(self, host: _Host, fetch_url: str) -> None:
        if host.timeouts >= self.config.max_host_timeouts:
            raise HostUnresponsive(
                f"{without_credentials(fetch_url)}: its host timed out {host.timeouts} times in this run; "
                "not asked again until the next run",
                url=fetch_url,
                permanent=False,
            )

    def _wait_turn(self, host: _Host) -> None:
        now = self.clock.monotonic()
        until = max(host.next_at, self._paused_until)
        if until > now:
            self.stats.slept_seconds += until - now
            self.clock.sleep(until - now)

    def _after_request(self, host: _Host) -> None:
        host.next_at = max(host.next_at, self.clock.monotonic() + host.interval)

    def _note_429(self) -> None:
        self.stats.status_429 += 1
        self._consecutive_429 += 1
        if self._consecutive_429 >= self.config.pause_after_429s:
            self._consecutive_429 = 0
            self.stats.global_pauses += 1
            self._paused_until = max(self._paused_until, self.clock.monotonic() + self.config.pause_seconds)
            log.warning(
                "%d rate-limit answers in a row: pausing every request for %.0fs",
                self.config.pause_after_429s,
                self.config.pause_seconds,
            )

    def _backoff(self, attempt: int) -> float:
        cfg = self.config
        delay = min(cfg.backoff_max, cfg.backoff_base * 2**attempt)
        return delay * (0.5 + 0.5 * self._rng.random())


class _Deadline:
    """A total time limit for one request and its answer: when it passes, the socket in use is shut down
    from a timer thread, which ends any read however slowly the server trickles bytes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.fired = False
        self.sock: socket.socket | None = None
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._lock = threading.Lock()

    def __enter__(self) -> _Deadline:
        _CURRENT.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        _CURRENT.deadline = None

    def watch(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self.sock = sock
            if self.fired:
                _shut(sock)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self.sock is not None:
                _shut(self.sock)

    def error(self, url: str) -> FetchError:
        # transient (not remembered in the cache; a later run asks again), but not retried in this run
        return FetchError(f"{url}: no complete answer within {self.seconds:g} s; cut off", url=url, permanent=False)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


_CURRENT = threading.local()


class _Watched(HTTPConnection):
    """Hands the socket a request goes out on to the current :class:`_Deadline` (new or reused).

    Mixed in before urllib3's HTTP or HTTPS connection class (``super()`` is the HTTPS one for the latter).
    """

    def connect(self) -> None:
        super().connect()
        deadline = getattr(_CURRENT, "deadline", None)
        if deadline is not None:
            deadline.watch(self.sock)

    def request(self, *args: Any, **kwargs: Any) -> Any:
        deadline = getattr(_CURRENT, "deadline", None)
        if deadline is not None:
            deadline.watch(self.sock)
        return super().request(*args, **kwargs)


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


class _DeadlineAdapter(HTTPAdapter):
    """requests' adapter with connections a :class:`_Deadline` can cut."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


_ACCEPT = {
    "page": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.5",
    "api": "application/json,*/*;q=0.5",
    "image": "image/jpeg,image/png,image/webp,image/gif,*/*;q=0.5",
    "robots": "text/plain,*/*;q=0.5",
}


def _is_timeout(exc: BaseException, depth: int = 0) -> bool:
    """Whether a requests/urllib3 error is a connect or read timeout (requests wraps urllib3's read timeout
    while streaming a body in a ConnectionError)."""
    if isinstance(exc, (requests.exceptions.Timeout, urllib3.exceptions.TimeoutError, socket.timeout)):
        return True
    if depth >= 4:
        return False
    inner = [a for a in exc.args if isinstance(a, BaseException)] + [
        e for e in (exc.__cause__, exc.__context__) if e is not None
    ]
    return any(_is_timeout(e, depth + 1) for e in inner)


def _same_origin(current: str, target: str) -> bool:
    """Whether a redirect from ``current`` to ``target`` keeps the host and port (or only upgrades http on
    port 80 to https on port 443 of the same host)."""
    (host, port), (to_host, to_port) = _origin(current), _origin(target)
    if not host or host != to_host:
        return False
    if port == to_port and urlsplit(current).scheme == urlsplit(target).scheme:
        return True
    return (urlsplit(current).scheme, port, urlsplit(target).scheme, to_port) == ("http", 80, "https", 443)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
