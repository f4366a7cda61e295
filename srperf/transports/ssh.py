"""Transport over SSH with paramiko: SFTP push, exit status, stderr, timeouts."""

from __future__ import annotations

import logging
import posixpath
import socket
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from srperf.config.model import SshConfig
from srperf.errors import TransportError
from srperf.netns import CommandResult
from srperf.transports.base import Transport, env_argv, shell_line

log = logging.getLogger(__name__)


class SshTransport(Transport):
    """Runs commands on a remote SUT.  Host keys are checked (RejectPolicy):
    the host must be in ``known_hosts`` (or the user's ~/.ssh/known_hosts)."""

    name = "ssh"

    def __init__(self, cfg: SshConfig, client_factory: Any = None) -> None:
        self.cfg = cfg
        self._factory = client_factory
        self._client: Any = None

    @property
    def where(self) -> str:
        return f"ssh {self.cfg.user}@{self.cfg.host}:{self.cfg.port}"

    def _connect(self) -> Any:
        if self._client is not None:
            return self._client
        import paramiko

        client = (self._factory or paramiko.SSHClient)()
        client.load_system_host_keys()
        if self.cfg.known_hosts:
            client.load_host_keys(self.cfg.known_hosts)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(self.cfg.host, port=self.cfg.port, username=self.cfg.user,
                           key_filename=self.cfg.key_file, timeout=self.cfg.timeout_s,
                           allow_agent=False, look_for_keys=self.cfg.key_file is None)
        except (paramiko.SSHException, OSError) as exc:
            raise TransportError(f"ssh {self.cfg.user}@{self.cfg.host}:{self.cfg.port}: "
                                 f"{exc}") from exc
        self._client = client
        return client

    def push(self, local: Path) -> str:
        client = self._connect()
        remote = posixpath.join(self.cfg.remote_dir, local.name)
        self.run(["mkdir", "-p", self.cfg.remote_dir])
        with client.open_sftp() as sftp:
            sftp.put(str(local), remote)
        return remote

    def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None,
            timeout: float = 60.0, input_text: str | None = None) -> CommandResult:
        client = self._connect()
        line = shell_line(env_argv(argv, env))
        log.debug("ssh %s: %s", self.cfg.host, line)
        stdin, stdout, stderr = client.exec_command(line, timeout=timeout)
        if input_text is not None:
            stdin.write(input_text)
        stdin.channel.shutdown_write()
        channel = stdout.channel
        deadline = time.monotonic() + timeout
        while not channel.exit_status_ready():
            if time.monotonic() > deadline:
                channel.close()
                return CommandResult(tuple(argv), 124, "", f"timed out after {timeout} s")
            time.sleep(0.01)
        try:
            out = stdout.read().decode(errors="replace")
            err = stderr.read().decode(errors="replace")
        except socket.timeout:
            out, err = "", f"timed out after {timeout} s reading output"
        return CommandResult(tuple(argv), channel.recv_exit_status(), out, err)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
