"""Per-session phase state: whether the run has patched, which tests it created, what it has seen."""

from __future__ import annotations

from dataclasses import dataclass, field

from planguard.phases.base import Classification
from planguard.run import RunModel

__all__ = ["MAX_CREATED_TESTS", "MAX_NODES", "PhaseState"]

#: At most this many created test paths are remembered; the oldest is forgotten first. Real runs
#: create a handful, so the cap only bounds memory against pathological sessions.
MAX_CREATED_TESTS = 4096
#: At most this many distinct sub-commands are remembered for the paper's within-step ordering (see
#: :attr:`PhaseState.nodes`). Past the cap, unseen sub-commands are ordered as new ones, which is what
#: the paper does for any sub-command it has not seen before.
MAX_NODES = 4096


def basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


@dataclass(slots=True)
class PhaseState:
    """The explicit, bounded state the phase rules read; change it only through :meth:`apply`.

    * ``has_patch``: a ``P`` role has occurred (the only switch between reproduce and validate).
    * ``created``: lower-cased test paths written by the run, oldest first, at most
      :data:`MAX_CREATED_TESTS`; ``created_basenames`` counts their file names, since a test is
      recognised by its path or by its file name alone.
    * ``open_file``: the file a windowed editor has open (SWE-agent 0.x), for the live rules.
    * ``nodes``: first-seen rank of each distinct sub-command. The paper's pipeline builds a graph
      whose nodes are distinct sub-commands and lists a step's sub-commands in node-creation order, so
      a sub-command seen in an earlier step is classified before the new ones of the same step.
    """

    has_patch: bool = False
    created: dict[str, None] = field(default_factory=dict)
    created_basenames: dict[str, int] = field(default_factory=dict)
    nodes: dict[int, int] = field(default_factory=dict)
    node_count: int = 0
    #: The run model (its root, the files it created as scripts or sources, the files it has seen): what the
    #: live rules decide a file's role by (PHASES_LIVE.md §4).
    run: RunModel = field(default_factory=RunModel)

    @property
    def open_file(self) -> str | None:
        """The file last opened in a windowed editor (the target of an ``edit`` naming no file)."""
        return self.run.open_file

    @open_file.setter
    def open_file(self, value: str | None) -> None:
        self.run.open_file = value

    @property
    def root(self) -> str | None:
        """The run's working directory when the source records it (session metadata ``cwd``): the live rules
        judge a path under it as a repository path, even when the repository itself lives under ``/tmp``."""
        return self.run.root

    @root.setter
    def root(self, value: str | None) -> None:
        self.run.root = value

    def is_created(self, path: str) -> bool:
        """``path`` (lower-cased) equals, or has the file name of, a test created in this run."""
        return path in self.created or basename(path) in self.created_basenames

    def add_created(self, path: str) -> None:
        if path in self.created:
            return
        if len(self.created) >= MAX_CREATED_TESTS:
            oldest = next(iter(self.created))
            del self.created[oldest]
            name = basename(oldest)
            left = self.created_basenames.get(name, 0) - 1
            if left > 0:
                self.created_basenames[name] = left
            else:
                self.created_basenames.pop(name, None)
        self.created[path] = None
        name = basename(path)
        self.created_basenames[name] = self.created_basenames.get(name, 0) + 1

    def apply(self, c: Classification) -> None:
        """Commit the effects of a classified call that has run."""
        if c.patched:
            self.has_patch = True
        if c.opened is not None:
            self.open_file = c.opened
        for path in c.created:
            self.add_created(path)
        if c.run is not None:
            self.run.apply(c.run)
        for node in c.nodes:
            if node not in self.nodes:
                if len(self.nodes) < MAX_NODES:
                    self.nodes[node] = self.node_count
                self.node_count += 1
