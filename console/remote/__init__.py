"""Run roots on other hosts, reached over the operator's own OpenSSH client.

A root written ``ssh://[user@]host[:port]/absolute/path`` is read by the remote host's own
``triage`` (its ``watch --jsonl`` stream, ``ls``, ``show``, ``publish``) through ``ssh``: the
operator's ``~/.ssh/config``, agent, ``known_hosts``, jump hosts and ControlMaster apply as they do
for git. Nothing listens, nothing is deployed but the same package on the remote host, and the
operator's key never leaves this machine: a decision is signed here and published there.
``url`` parses the root, ``ssh`` builds the commands (never through a local shell; the remote
command line quoted so the remote shell cannot reinterpret it), ``feed`` follows a remote stream.
"""
