"""Telling the operator, on their own channels, of the human gates that wait (``triage notify``).

Pure logic beside the core: which findings are gates that wait (``gates``), what a message says
(``message``), when to tell and to remind and how to retry (``schedule``), what was told, kept
outside the roots (``state``), the channels and their couriers (``channels``, through Apprise),
and the notifier that ties them (``engine``). No Textual, no Rich, no watching: the command in
``console/cli/notify.py`` feeds the notifier from a ``RunMonitor``. ``docs/notify.md`` is the
operator's guide.
"""

from __future__ import annotations

from .channels import AppriseSender, BellSender, ChannelError, Courier, senders
from .engine import Notifier
from .gates import Candidates, gate_key, waiting
from .message import Message, compose
from .schedule import Delivery, backoff, plan
from .state import SentState, StateError, channel_id, state_path

__all__ = [
    "AppriseSender", "BellSender", "Candidates", "ChannelError", "Courier", "Delivery", "Message", "Notifier",
    "SentState", "StateError", "backoff", "channel_id", "compose", "gate_key", "plan", "senders", "state_path",
    "waiting",
]
