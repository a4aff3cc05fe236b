"""The decision screen: what will be signed, by whom, until when; the choices; the comment.

Signing takes two deliberate keys: ctrl+s prepares the exact payload and shows
it, then ``y`` signs and publishes it (any other key goes back to editing). The
work (reading the finding again, ssh-keygen, publishing) runs in a thread
worker; the screen closes with the published decision, or says why not.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from ..core import decisions, signing
from ..core.audit import AuditError
from ..core.config import Policy, RootSettings, Settings
from ..core.findings import Finding
from ..core.resume import RESUMING_CHOICES
from ..core.risk import destructive
from ..core.safety import safe
from ..core.formats import lookup
from ..paths import style
from ..widgets.detail import DECISION_WORDS

REMEDY_HELP = {
    "revise_skill": "revise the skill the agent follows",
    "swap_agent": "give the node to another agent",
    "reduce_task": "cut the task down to what can succeed",
}


@dataclass(frozen=True)
class Signing:
    """Who signs and how, from the operator's settings and the command line."""

    operator: str | None
    key: str | None
    policy: Policy
    allowed_keys: tuple[str, ...] = ()
    settings: Settings | None = None  # per-root options (resume commands)

    def root(self, path: str) -> RootSettings | None:
        return self.settings.root(path) if self.settings is not None else None


MAX_EVIDENCE = 12  # evidence lines shown here (the detail pane has them all)
NO_RESUME_COMMAND = ("no resume_command for this root: the decision will be signed but nothing will run; "
                     "add [[roots]] resume_command to the settings")


def _text(value: Any, limit: int = 400) -> str:
    return safe(value, max_len=limit)


class DecisionScreen(ModalScreen["decisions.Decided | None"]):
    """Decide one gated finding."""

    CSS_PATH = style("decision.tcss")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "prepare", "Sign…", id="decision.sign", priority=True),
        Binding("y", "confirm", "Yes, sign", id="decision.yes"),
        Binding("escape", "back", "Cancel", id="decision.cancel", priority=True),
        Binding("question_mark", "app.toggle_help", "Help", id="decision.help"),  # (in the comment: text)
    ]

    def __init__(self, finding: Finding, how: Signing, *, retry: bool = False) -> None:
        super().__init__()
        self.finding = finding
        self.how = how
        self.gate = decisions.gate_of(finding, "retry" if retry else None) or "retry"
        self.choices = decisions.CHOICES.get(self.gate, ())
        self.prepared: decisions.Prepared | None = None
        self.busy = False
        # A confirmation of a step that destroys data: the safe answer is the one preselected.
        self.destructive = self.gate == "confirm" and destructive(finding.details.get("confirm_prompt"),
                                                                    finding.next_action)
        spec = how.root(finding.root)
        self.resume_command = bool(spec is not None and spec.resume_command)

    # --- layout ---------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Vertical(id="decision-box"):
            yield Static(self._title(), id="decision-title")
            with VerticalScroll(id="decision-body"):
                yield Static(self._about(), id="decision-about")
                yield Static(Text(NO_RESUME_COMMAND, style="bold"), id="decision-no-resume")
                yield Static(Text("choice", style="bold"), classes="decision-label")
                yield OptionList(*[Option(self._choice_line(c), id=c) for c in self.choices], id="decision-choices")
                yield Static(Text("remedy", style="bold"), classes="decision-label", id="decision-remedy-label")
                yield OptionList(*[Option(self._remedy_line(r), id=r) for r in decisions.REMEDIES], id="decision-remedies")
                yield Static(Text(self._comment_label(), style="bold"), classes="decision-label", id="decision-comment-label")
                yield Input(placeholder=self._comment_placeholder(), id="decision-comment", max_length=decisions.MAX_COMMENT)
                yield Static(Text("will be signed", style="bold"), classes="decision-label")
                yield Static(id="decision-preview")
            yield Static(id="decision-message")
        yield Footer()

    def _title(self) -> Text:
        f = self.finding
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" Decide · {self.gate} ", style="bold reverse")
        text.append(f"  {_text(f.run, 60)} / {_text(f.node or '-', 40)}")
        return text

    def _about(self) -> Text:
        f = self.finding
        row = lookup(f.taxonomy, f.class_)
        text = Text()
        text.append(f"{'finding':<12}", style="bold")
        text.append(_text(f.path) + "\n")
        text.append(f"{'sha256':<12}", style="bold")
        text.append(f"{f.sha256}\n")
        text.append(f"{'class':<12}", style="bold")
        text.append(f"{_text(f.class_)}" + (f" — {row.meaning}" if row else "") + "\n")
        for label, key in (("asks", "confirm_prompt"), ("question", "clarification_question")):
            if f.details.get(key):
                text.append(f"{label:<12}", style="bold")
                text.append(_text(f.details[key], 1200) + "\n", style="bold")
        if f.next_action:
            text.append(f"{'next action':<12}", style="bold")
            text.append(_text(f.next_action, 1200) + "\n")
        if self.destructive:
            text.append(f"{'destructive':<12}", style="bold")
            text.append("this step destroys data: reject is preselected\n", style="bold red")
        if f.evidence:
            text.append(f"{'evidence':<12}", style="bold")
            for i, e in enumerate(f.evidence[:MAX_EVIDENCE]):
                text.append(("" if i == 0 else " " * 12) + "• " + _text(e.text, 600))
                text.append(f"   ← {_text(e.source, 200)}\n", style="dim")
            if len(f.evidence) > MAX_EVIDENCE:
                text.append(" " * 12 + f"… {len(f.evidence) - MAX_EVIDENCE} more in the detail pane\n", style="dim")
        if f.decision:
            state = decisions.state_now(f.decision, datetime.now(timezone.utc))
            text.append(f"{'decision':<12}", style="bold")
            text.append(f"{DECISION_WORDS.get(state, state)}: {_text(f.decision.get('choice'))} by "
                        f"{_text(f.decision.get('operator'))} at {_text(f.decision.get('issued_at'))}\n", style="yellow")
        text.append(f"{'signer':<12}", style="bold")
        text.append(self._signer_line())
        return text

    def _signer_line(self) -> str:
        how = self.how
        if not how.operator:
            return "no operator set: add operator to the settings, or start with --operator"
        where = f"key file {how.key}" if how.key and not how.key.endswith(".pub") else "ssh-agent"
        if how.policy.source is None:
            return f"{how.operator} ({where}); no policy is set, so nobody may sign"
        allowed = how.policy.allows(self.gate, how.operator)
        lifetime = how.policy.lifetime_s
        span = f"{lifetime // 3600} h" if lifetime % 3600 == 0 else f"{lifetime // 60} min"
        return (f"{how.operator} ({where}); decision valid for {span}" +
                ("" if allowed else f"; the policy does not let {how.operator} sign {self.gate} gates"))

    def _choice_line(self, choice: str) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{choice:<22}", style="bold")
        text.append(decisions.CHOICE_HELP.get(choice, ""), style="dim")
        return text

    def _remedy_line(self, remedy: str) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"{remedy:<22}", style="bold")
        text.append(REMEDY_HELP[remedy], style="dim")
        return text

    def _comment_label(self) -> str:
        if self.gate == "clarify":
            return "answer (required)"
        if self.gate == "hold":
            return "note to the people who act on it (required)"
        return "comment" + (" (required)" if self.gate in decisions.COMMENT_REQUIRED else " (optional)")

    def _comment_placeholder(self) -> str:
        return "the answer to the question" if self.gate == "clarify" else "why (signed with the decision)"

    def on_mount(self) -> None:
        first = self.choices.index("reject") if self.destructive and "reject" in self.choices else 0
        self.query_one("#decision-choices", OptionList).highlighted = first
        self.query_one("#decision-remedies", OptionList).highlighted = 0
        self._sync()
        self.query_one("#decision-choices", OptionList).focus()

    # --- state ----------------------------------------------------------------------
    @property
    def choice(self) -> str | None:
        lst = self.query_one("#decision-choices", OptionList)
        return self.choices[lst.highlighted] if lst.highlighted is not None and self.choices else None

    @property
    def remedy(self) -> str | None:
        if self.choice != "release":
            return None
        lst = self.query_one("#decision-remedies", OptionList)
        return decisions.REMEDIES[lst.highlighted] if lst.highlighted is not None else None

    @property
    def comment(self) -> str:
        return self.query_one("#decision-comment", Input).value

    def _fields(self) -> dict[str, Any]:
        text = self.comment.strip() or None
        if self.gate == "clarify":
            return {"answer": text, "comment": None, "remedy": None}
        return {"comment": text, "remedy": self.remedy, "answer": None}

    @property
    def runs_nothing(self) -> bool:
        """The choice asks for a resume, but the root has no command to run one: signed, nothing runs."""
        return self.choice in RESUMING_CHOICES and not self.resume_command

    def _sync(self) -> None:
        releasing = self.choice == "release"
        for selector in ("#decision-remedies", "#decision-remedy-label"):
            self.query_one(selector).display = releasing
        self.query_one("#decision-no-resume").display = self.runs_nothing
        self._preview()

    def _preview(self) -> None:
        if self.prepared is not None:
            payload = self.prepared.payload
        else:  # the same fields as the signed payload; what only signing settles, said in words
            payload = decisions.build_payload(self.finding, gate=self.gate, choice=self.choice or "", operator=self.how.operator or "",
                                              lifetime_s=self.how.policy.lifetime_s, **self._fields())
            payload.update(decision_id="(made when signing)", issued_at="(now)", expires_at="(now + lifetime)",
                           key_fingerprint="(the signing key's)", supersedes="(a decision it replaces, if any)")
        body = json.dumps(payload, ensure_ascii=True, indent=2)  # ASCII: escapes any control characters
        self.query_one("#decision-preview", Static).update(Text(safe(body, max_len=20000, keep_newlines=True)))

    def _say(self, message: str, style: str = "") -> None:
        self.query_one("#decision-message", Static).update(Text(safe(message, max_len=1200, keep_newlines=True), style=style))

    @on(OptionList.OptionHighlighted, "#decision-choices")
    @on(OptionList.OptionHighlighted, "#decision-remedies")
    def _changed(self, _event: OptionList.OptionHighlighted) -> None:
        self._unprepare()
        self._sync()

    @on(OptionList.OptionSelected, "#decision-choices")
    def _chosen(self, _event: OptionList.OptionSelected) -> None:
        if self.choice == "release":
            self.query_one("#decision-remedies", OptionList).focus()
        else:
            self.query_one("#decision-comment", Input).focus()

    @on(OptionList.OptionSelected, "#decision-remedies")
    def _remedy_chosen(self, _event: OptionList.OptionSelected) -> None:
        self.query_one("#decision-comment", Input).focus()

    @on(Input.Changed, "#decision-comment")
    def _typed(self, _event: Input.Changed) -> None:
        self._unprepare()
        self._preview()

    @on(Input.Submitted, "#decision-comment")
    def _submitted(self, _event: Input.Submitted) -> None:
        self.action_prepare()

    def _unprepare(self) -> None:
        if self.prepared is not None:
            self.prepared = None
            self._say("")

    # --- actions --------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "confirm":
            return True if self.prepared is not None and not self.busy else False
        if action == "prepare":
            return False if self.busy else True
        return True

    def action_back(self) -> None:
        if self.busy:
            return
        if self.prepared is not None:
            self._unprepare()
            self._preview()
            self.query_one("#decision-comment", Input).disabled = False
            self.refresh_bindings()
            return
        self.dismiss(None)

    def action_prepare(self) -> None:
        if self.busy or self.choice is None:
            return
        self.busy = True
        self._say("checking…", "dim")
        self.refresh_bindings()
        self._prepare(self.choice, self._fields())

    def _remote(self):
        """(root, ssh client, remote command) when the finding lives on an ssh:// root, else None."""
        from ..core.remote_root import is_remote, parse
        from ..remote import ssh

        if not is_remote(self.finding.root):
            return None
        followed = getattr(self.app, "remote", None)  # the console's own way to its remote roots
        if followed is not None and followed.holds(self.finding.root):
            return parse(self.finding.root), followed.ssh, followed.commands.get(self.finding.root)
        settings = self.how.settings or Settings()
        spec = settings.root(self.finding.root)
        return parse(self.finding.root), ssh.client(settings.ssh_command), spec.remote_command if spec else None

    @work(thread=True, exclusive=True, group="decision")
    def _prepare(self, choice: str, fields: dict[str, Any]) -> None:
        from ..remote import decide as remote_decide
        from ..remote.ssh import RemoteError

        try:
            signer = signing.resolve(self.how.key, interactive=False, prefer=list(self.how.allowed_keys))
            remote = self._remote()
            if remote is not None:  # signed here, published on its host (docs/remote.md)
                root, ssh, command = remote
                answer = fields.pop("answer", None)
                prepared = remote_decide.prepare(root, self.finding.path, choice=choice, operator=self.how.operator,
                                                 policy=self.how.policy, signer=signer, answer_text=answer, ssh=ssh,
                                                 remote_command=command, **fields)
            else:
                prepared = decisions.prepare(self.finding.root, self.finding, choice=choice, operator=self.how.operator,
                                             policy=self.how.policy, signer=signer, **fields)
        except (decisions.DecisionError, signing.SigningError, OSError, RemoteError) as exc:
            self.app.call_from_thread(self._refused, str(exc))
            return
        self.app.call_from_thread(self._ready, prepared, signer)

    def _refused(self, why: str) -> None:
        self.busy = False
        self.prepared = None
        self._say(why, "bold red")
        self.refresh_bindings()

    def _ready(self, prepared: decisions.Prepared, signer: signing.Signer) -> None:
        self.busy = False
        self.prepared = prepared
        self.signer = signer
        self._preview()
        p = prepared.payload
        nothing = " Nothing will run: this root has no resume_command." if self.runs_nothing else ""
        self._say(f"Sign '{p['choice']}' on this {p['gate']} gate as {p['operator']} ({signer.describe()}), "
                  f"valid until {p['expires_at']}?{nothing}  y: sign and publish · escape: back", "bold")
        self.query_one("#decision-comment", Input).disabled = True
        self.set_focus(None)
        self.refresh_bindings()

    def action_confirm(self) -> None:
        if self.prepared is None or self.busy:
            return
        self.busy = True
        self._say("signing…", "dim")
        self.refresh_bindings()
        self._publish(self.prepared, self.signer)

    @work(thread=True, exclusive=True, group="decision")
    def _publish(self, prepared, signer: signing.Signer) -> None:
        from ..remote import decide as remote_decide
        from ..remote.ssh import RemoteError

        try:
            remote = self._remote()
            if remote is not None:
                _root, ssh, command = remote
                done = remote_decide.publish(prepared, signing.sign(prepared.data, signer), ssh=ssh,
                                             remote_command=command)
            else:
                done = decisions.publish(prepared, signer=signer, policy=self.how.policy)
        except remote_decide.RemoteAlreadyDecided as exc:
            p = exc.payload
            self.app.call_from_thread(self._refused, f"Already decided by {p.get('operator') or p.get('decided_by')}: "
                                      f"{p.get('choice')} at {p.get('issued_at')}. Nothing was signed.")
            return
        except RemoteError as exc:
            self.app.call_from_thread(self._refused, f"Not published: {exc}")
            return
        except decisions.AlreadyDecided as exc:
            p = exc.payload
            self.app.call_from_thread(self._refused, f"Already decided by {p.get('operator')}: {p.get('choice')} at "
                                      f"{p.get('issued_at')}. Nothing was signed.")
            return
        except (decisions.DecisionError, signing.SigningError, AuditError, OSError) as exc:
            self.app.call_from_thread(self._refused, f"Not published: {exc}")
            return
        self.app.call_from_thread(self.dismiss, done)
