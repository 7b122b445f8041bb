"""The jars of a real Kafka release, fetched from Maven Central into a git-ignored cache, and the
scenario client compiled against them.

Nothing here is committed as a binary: ``simulator/realkafka/pom.xml`` names the artifacts, Maven
(``mvn dependency:copy-dependencies``) copies them into ``.cache/realkafka/<artifact>-<version>/``, and
``javac`` compiles ``java/ScenarioClient.java`` into ``.cache/realkafka/client-classes/``. A second call
finds them there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
POM = HERE / "pom.xml"
CLIENT_SOURCE = HERE / "java" / "ScenarioClient.java"
#: The cache (git-ignored); ``$REALKAFKA_CACHE`` moves it.
CACHE = Path(os.environ.get("REALKAFKA_CACHE", REPO / ".cache" / "realkafka"))


class HarnessUnavailable(RuntimeError):
    """What the harness needs (Java 17, Maven, Maven Central) is not there; the message says which."""


@dataclass(frozen=True)
class Release:
    """One Kafka release the harness runs: its broker, its logging backend and its client versions."""

    line: str  # "2.7", "3.7", "4.4": what the corpus and the tests call it
    version: str  # the Maven version of the broker and the same-version client
    older_client: str  # the previous release line's client, the "one older" client
    logging: str  # the pom profile: log4j1 | reload4j | log4j2
    zookeeper: bool  # 2.7: ZooKeeper mode; 3.7 and 4.x: KRaft (combined broker + controller)
    log4j2_version: str = "2.24.3"

    @property
    def log4j2(self) -> bool:
        return self.logging == "log4j2"


#: The releases the corpus is recorded from: the last text-era line (ZooKeeper), the JSON era with the
#: Scala coordinator (KRaft), and the newest 4.x (Java coordinator, log4j2).
RELEASES: dict[str, Release] = {
    "2.7": Release("2.7", "2.7.2", "2.6.3", "log4j1", zookeeper=True),
    "3.7": Release("3.7", "3.7.2", "3.6.2", "reload4j", zookeeper=False),
    "4.4": Release("4.4", "4.4.0", "4.3.1", "log4j2", zookeeper=False, log4j2_version="2.25.5"),
}


def release(line: str) -> Release:
    try:
        return RELEASES[line]
    except KeyError:
        raise HarnessUnavailable(
            f"no Kafka release {line!r} in the harness (have {', '.join(RELEASES)})"
        ) from None


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise HarnessUnavailable(f"the real-Kafka harness needs {tool} on PATH")
    return path


def fetch(rel: Release, artifact: str, version: str | None = None) -> Path:
    """The folder holding every runtime jar of ``artifact`` (``kafka_2.13`` or ``kafka-clients``) at
    ``version`` (default: the release's) plus the release's logging backend; fetched once."""
    version = version or rel.version
    out = CACHE / f"{artifact}-{version}"
    done = out / ".complete"
    if done.is_file():
        return out
    mvn = _need("mvn")
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-Dkafka.artifact={artifact}",
        f"-Dkafka.version={version}",
        f"-Dlog4j2.version={rel.log4j2_version}",
        f"-P{rel.logging}",
        f"-DoutputDirectory={out}",
        # Maven's own repository inside the cache too: nothing lands outside the checkout
        f"-Dmaven.repo.local={CACHE / 'm2'}",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
        raise HarnessUnavailable(f"mvn could not fetch {artifact} {version}: {' | '.join(tail)}")
    done.write_text(" ".join(cmd) + "\n")
    return out


def client_classes(rel: Release) -> Path:
    """``ScenarioClient`` compiled once, against the oldest client the harness runs (2.6), so the same
    classes run with every client version."""
    out = CACHE / "client-classes"
    stamp = out / ".source-mtime"
    mtime = str(CLIENT_SOURCE.stat().st_mtime_ns)
    if stamp.is_file() and stamp.read_text() == mtime:
        return out
    oldest = min(RELEASES.values(), key=lambda r: tuple(int(p) for p in r.older_client.split(".")))
    lib = fetch(oldest, "kafka-clients", oldest.older_client)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    proc = subprocess.run(
        [_need("javac"), "--release", "11", "-cp", f"{lib}/*", "-d", str(out), str(CLIENT_SOURCE)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise HarnessUnavailable(f"javac failed on {CLIENT_SOURCE.name}: {proc.stderr.strip()[-500:]}")
    stamp.write_text(mtime)
    return out


def java() -> str:
    """Java 17: ``$JAVA_HOME/bin/java`` when set, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return _need("java")
