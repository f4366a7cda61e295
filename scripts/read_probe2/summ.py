import re, sys
REASON = re.compile(r"not trusted|owned by|writable|symlink|not a regular|is a FIFO|not private|refused|FIFO|not a directory|larger than|too large|special|/proc|/dev")
for fn in sys.argv[1:]:
    lines = open(fn).read().splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\S+)\s+rc=\s*(\d+) (.*)$", lines[i])
        if m:
            msg = lines[i+1].strip() if i + 1 < len(lines) else ""
            cls, rc, case = m.groups()
            tag = cls
            if cls == "ok" and not REASON.search(msg):
                tag = "ok-other-reason"
            print(f"{tag}\t{rc}\t{case}\t{msg[:230]}")
            i += 2
        else:
            i += 1
