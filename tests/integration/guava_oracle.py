"""The Guava oracle of test_guava_layouts.py: java/GuavaOracle.java compiled once per pytest
session against Debian's Guava 31.1 (/usr/share/java/guava.jar, JDK 17's javac) and run as one
JVM for the whole session, driven line by line over a pipe (protocol in the .java file).

    oracle = GuavaOracle(classdir)            # or the session fixture `guava`
    f = oracle.new("guava", 100, 0.1, "utf8") # a real BloomFilter.create(funnel, 100, 0.1)
                                              # (layouts: guava, guava-mitz32, guava-unrounded,
                                              # guava-mitz32-unrounded)
    f.add([b"a", "b"]) -> [1, 1]              # put() of each item (bytes, or str as UTF-8)
    f.has([...]), f.bits(), f.card(), f.k, f.m, f.strategy_ordinal, f.load(bits),
    f.indexes([...]) -> [frozenset of bits], f.serialized() -> bytes, f.free()

Nothing is skipped: a missing javac, java or guava.jar fails the test with the reason.
"""

import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

GUAVA_JAR = os.environ.get("GUAVA_JAR", "/usr/share/java/guava.jar")
SOURCE = Path(__file__).resolve().parent / "java" / "GuavaOracle.java"
INSTALL_HINT = "install a JDK (Debian: openjdk-17-jdk-headless) and Guava (libguava-java)"


def _tool(name):
    """/usr/bin/<name> (JDK 17 on Debian) or the one on PATH."""
    path = shutil.which(name) or (f"/usr/bin/{name}" if os.path.exists(f"/usr/bin/{name}")
                                  else None)
    assert path, f"{name} not found: the Guava oracle needs it ({INSTALL_HINT})"
    return path


def compile_oracle(outdir):
    """javac of GuavaOracle.java into `outdir`; returns outdir."""
    assert os.path.exists(GUAVA_JAR), f"{GUAVA_JAR} not found ({INSTALL_HINT})"
    javac = _tool("javac")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    res = subprocess.run([javac, "-encoding", "UTF-8", "-cp", GUAVA_JAR, "-d", str(outdir),
                          str(SOURCE)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"javac of {SOURCE} failed:\n{res.stdout}{res.stderr}"
    return outdir


def as_bytes(item):
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, int):
        return str(item).encode()
    return bytes(item)


def token(item):
    return "x" + as_bytes(item).hex()


class OracleError(Exception):
    """The oracle answered ERR (e.g. Long.parseLong refused an int64le item)."""


class GuavaOracle:
    """One JVM running GuavaOracle; thread-safe (one command at a time)."""

    def __init__(self, classdir):
        java = _tool("java")
        # The JVM's stderr goes to a file (a pipe nobody reads could fill up and block it).
        self.stderr_path = Path(classdir) / "oracle-stderr.log"
        with open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(
                [java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 "-cp", f"{classdir}{os.pathsep}{GUAVA_JAR}", "GuavaOracle"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                text=True, encoding="ascii", bufsize=1)
        self.lock = threading.Lock()
        self.counter = 0
        assert self.call("PING") == ["pong"]

    def call(self, *words):
        """Sends one command line; returns the answer's words after OK (OracleError on ERR)."""
        line = " ".join(str(w) for w in words)
        with self.lock:
            if self.proc.poll() is not None:
                raise AssertionError("the Guava oracle JVM exited:\n" + self._stderr())
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        if not answer:
            raise AssertionError(f"the Guava oracle JVM died on {line[:200]!r}:\n"
                                 + self._stderr())
        answer = answer.rstrip("\n")
        if answer.startswith("ERR"):
            raise OracleError(f"{answer} (command {line[:200]!r})")
        assert answer.startswith("OK"), f"oracle answered {answer[:200]!r}"
        return answer.split()[1:]

    def _stderr(self):
        try:
            return self.stderr_path.read_text(errors="replace")[-20000:]
        except OSError as exc:
            return f"<no stderr: {exc}>"

    def new(self, layout, capacity, error, funnel="utf8"):
        with self.lock:
            self.counter += 1
            fid = f"f{self.counter}"
        k, m = self.call("NEW", fid, layout, capacity, error, funnel)
        return OracleFilter(self, fid, layout, capacity, error, funnel, int(k), int(m))

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


class OracleFilter:
    """A filter living in the oracle JVM."""

    BATCH = 500  # items per command line

    def __init__(self, oracle, fid, layout, capacity, error, funnel, k, m):
        self.oracle, self.id = oracle, fid
        self.layout, self.capacity, self.error, self.funnel = layout, capacity, error, funnel
        self.k, self.m = k, m

    def _batched(self, verb, items):
        items = list(items)
        out = []
        for i in range(0, len(items), self.BATCH):
            out += self.oracle.call(verb, self.id, *[token(x) for x in items[i:i + self.BATCH]])
        return out

    def add(self, items):
        """put() of each item in order -> [1/0]."""
        return [int(x) for x in self._batched("ADD", items)]

    def has(self, items):
        """mightContain() of each item -> [1/0]."""
        return [int(x) for x in self._batched("HAS", items)]

    def indexes(self, items):
        """The bits one put() of each item sets in an empty filter like this one."""
        return [frozenset() if x == "-" else frozenset(int(j) for j in x.split(","))
                for x in self._batched("INDEXES", items)]

    def bits(self):
        return [int(x) for x in self.oracle.call("BITS", self.id)]

    def card(self):
        return int(self.oracle.call("CARD", self.id)[0])

    @property
    def strategy_ordinal(self):
        return int(self.oracle.call("INFO", self.id)[2])

    def load(self, bits):
        bits = sorted(bits)
        self.oracle.call("LOAD", self.id, *bits)

    def serialized(self):
        return bytes.fromhex(self.oracle.call("SER", self.id)[0])

    def free(self):
        self.oracle.call("FREE", self.id)


def bits_of_string(data):
    """The set bit offsets of a Redis string (offset j = bit 7 - j % 8 of byte j // 8, as
    SETBIT/GETBIT number them)."""
    out = []
    for i, byte in enumerate(data or b""):
        if byte:
            for b in range(8):
                if byte & (0x80 >> b):
                    out.append(8 * i + b)
    return out


def string_of_bits(bits, nbytes=None):
    """The Redis string whose set bits are `bits` (inverse of bits_of_string)."""
    bits = list(bits)
    size = max([(j >> 3) + 1 for j in bits] + [nbytes or 0])
    buf = bytearray(size)
    for j in bits:
        buf[j >> 3] |= 0x80 >> (j & 7)
    return bytes(buf)


@pytest.fixture(scope="session")
def guava_classes(tmp_path_factory):
    """The directory of the compiled GuavaOracle class (compiled once per session)."""
    return compile_oracle(tmp_path_factory.mktemp("guava-oracle"))


@pytest.fixture(scope="session")
def guava(guava_classes):
    """The session's GuavaOracle (one JVM)."""
    oracle = GuavaOracle(guava_classes)
    yield oracle
    oracle.close()


# ---------------------------------------------------------------------------------------------
# The spec's maths in Python, independent of Java: used to check the oracle itself (that each
# layout really is the strategy it claims) before trusting it against the proxy.

M64 = (1 << 64) - 1


def _rotl64(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _fmix64(k):
    k ^= k >> 33
    k = (k * 0xff51afd7ed558ccd) & M64
    k ^= k >> 33
    k = (k * 0xc4ceb9fe1a85ec53) & M64
    k ^= k >> 33
    return k


def murmur3_x64_128(data, seed=0):
    """(h1, h2) of MurmurHash3_x64_128 (smhasher), as unsigned 64-bit ints."""
    c1, c2 = 0x87c37b91114253d5, 0x4cf5ad432745937f
    h1 = h2 = seed
    nblocks = len(data) // 16
    for i in range(nblocks):
        k1 = int.from_bytes(data[16 * i:16 * i + 8], "little")
        k2 = int.from_bytes(data[16 * i + 8:16 * i + 16], "little")
        k1 = (_rotl64((k1 * c1) & M64, 31) * c2) & M64
        h1 ^= k1
        h1 = (_rotl64(h1, 27) + h2) & M64
        h1 = (h1 * 5 + 0x52dce729) & M64
        k2 = (_rotl64((k2 * c2) & M64, 33) * c1) & M64
        h2 ^= k2
        h2 = (_rotl64(h2, 31) + h1) & M64
        h2 = (h2 * 5 + 0x38495ab5) & M64
    tail = data[16 * nblocks:]
    k1 = int.from_bytes(tail[:8], "little")
    k2 = int.from_bytes(tail[8:], "little")
    if len(tail) > 8:
        k2 = (_rotl64((k2 * c2) & M64, 33) * c1) & M64
        h2 ^= k2
    if len(tail) > 0:
        k1 = (_rotl64((k1 * c1) & M64, 31) * c2) & M64
        h1 ^= k1
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    h1, h2 = _fmix64(h1), _fmix64(h2)
    h1 = (h1 + h2) & M64
    h2 = (h2 + h1) & M64
    return h1, h2


def funnel_bytes(funnel, item):
    """The bytes Guava hashes for a valid item (valid UTF-8 / a decimal integer)."""
    text = as_bytes(item).decode("utf-8")
    if funnel == "utf8":
        return text.encode("utf-8")
    if funnel == "utf16le":
        return text.encode("utf-16-le")
    return (int(text) & M64).to_bytes(8, "little")


UNROUNDED = ("guava-unrounded", "guava-mitz32-unrounded")  # modulus: the int bit count
MITZ32 = ("guava-mitz32", "guava-mitz32-unrounded")  # MURMUR128_MITZ_32's index loop


def geometry(layout, capacity, error):
    """(k, M) of a layout per the spec (M is the modulus and the bit size)."""
    import math
    assert layout in ("guava", "guava-mitz32") + UNROUNDED, f"unknown layout {layout!r}"
    n = capacity or 1
    raw = -n * math.log(error) / (math.log(2) ** 2)
    # Java's (long)/(int) cast of a positive double truncates (and saturates).
    num_bits = min(int(raw), (2 ** 31 - 1) if layout in UNROUNDED else (2 ** 63 - 1))
    m = num_bits if layout in UNROUNDED else 64 * -(-num_bits // 64)
    k = max(1, int(math.floor(num_bits / n * math.log(2) + 0.5)))
    return k, m


def spec_indexes(layout, capacity, error, funnel, item):
    """The bit indexes of `item` per the spec (a set): MITZ_64 for guava and guava-unrounded,
    MITZ_32 (int arithmetic on h1's two halves) for guava-mitz32 and guava-mitz32-unrounded,
    each modulo its layout's M."""
    k, m = geometry(layout, capacity, error)
    h1, h2 = murmur3_x64_128(funnel_bytes(funnel, item))
    out = set()
    if layout in MITZ32:
        def s32(x):
            x &= 0xffffffff
            return x - (1 << 32) if x >= 1 << 31 else x
        hash1, hash2 = s32(h1), s32(h1 >> 32)
        for i in range(1, k + 1):
            c = s32(hash1 + i * hash2)
            if c < 0:
                c = ~c
            out.add(c % m)
        return out
    combined = h1
    for _ in range(k):
        out.add((combined & ((1 << 63) - 1)) % m)
        combined = (combined + h2) & M64
    return out
