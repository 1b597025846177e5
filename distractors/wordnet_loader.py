"""Load Debian's WordNet 3.0 through NLTK without downloading anything.

NLTK 3.10 refuses paths outside ``nltk.data.path`` and rejects symlinks, and Debian's ``wordnet-base``
package lacks the ``lexnames`` file NLTK's reader needs. So we copy ``/usr/share/wordnet`` into
``<root>/corpora/wordnet/``, write ``lexnames`` (the standard WordNet 3.0 lexicographer file list) and put
``<root>`` first in ``nltk.data.path`` (recipe in shared/STACK.md).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

logger = logging.getLogger(__name__)

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")

# The 45 lexicographer files of WordNet 3.0, in file-number order, with their syntactic category
# (1 noun, 2 verb, 3 adjective, 4 adverb).
LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3),
    ("adj.pert", 3),
    ("adv.all", 4),
    ("noun.Tops", 1),
    ("noun.act", 1),
    ("noun.animal", 1),
    ("noun.artifact", 1),
    ("noun.attribute", 1),
    ("noun.body", 1),
    ("noun.cognition", 1),
    ("noun.communication", 1),
    ("noun.event", 1),
    ("noun.feeling", 1),
    ("noun.food", 1),
    ("noun.group", 1),
    ("noun.location", 1),
    ("noun.motive", 1),
    ("noun.object", 1),
    ("noun.person", 1),
    ("noun.phenomenon", 1),
    ("noun.plant", 1),
    ("noun.possession", 1),
    ("noun.process", 1),
    ("noun.quantity", 1),
    ("noun.relation", 1),
    ("noun.shape", 1),
    ("noun.state", 1),
    ("noun.substance", 1),
    ("noun.time", 1),
    ("verb.body", 2),
    ("verb.change", 2),
    ("verb.cognition", 2),
    ("verb.communication", 2),
    ("verb.competition", 2),
    ("verb.consumption", 2),
    ("verb.contact", 2),
    ("verb.creation", 2),
    ("verb.emotion", 2),
    ("verb.motion", 2),
    ("verb.perception", 2),
    ("verb.possession", 2),
    ("verb.social", 2),
    ("verb.stative", 2),
    ("verb.weather", 2),
    ("adj.ppl", 3),
)

_LOCK = threading.Lock()
_READER: Optional[Any] = None


class WordNetUnavailable(RuntimeError):
    """Raised when no WordNet 3.0 database can be found (install Debian's wordnet-base)."""


def lexnames_text() -> str:
    """Return the content of WordNet 3.0's ``lexnames`` file (``NN<TAB>name<TAB>pos``)."""
    return "".join(f"{i:02d}\t{name}\t{pos}\n" for i, (name, pos) in enumerate(LEXNAMES))


def prepare_wordnet_root(root: Path, source: Path = DEBIAN_WORDNET_DIR) -> Path:
    """Copy a WordNet database into ``root/corpora/wordnet`` so NLTK's path sandbox accepts it.

    Args:
        root: a directory that will be put in ``nltk.data.path``.
        source: the folder holding ``data.noun``, ``index.noun`` ... (Debian: /usr/share/wordnet).

    Returns:
        The ``root/corpora/wordnet`` directory.

    Raises:
        WordNetUnavailable: when ``source`` has no ``data.noun``.
    """
    target = root / "corpora" / "wordnet"
    if (target / "data.noun").exists() and (target / "lexnames").exists():
        return target
    if not (source / "data.noun").exists():
        raise WordNetUnavailable(f"{source}/data.noun not found: install Debian's wordnet-base package")
    target.mkdir(parents=True, exist_ok=True)
    for item in source.iterdir():
        if item.is_file():
            shutil.copyfile(item, target / item.name)
    (target / "lexnames").write_text(lexnames_text(), encoding="ascii")
    logger.info("copied WordNet from %s into %s", source, target)
    return target


def default_root() -> Path:
    """Pick the NLTK data root: $CROWDQA_NLTK_DATA, else <CROWDQA_MODEL_DIR>/nltk_data, else a temp dir."""
    explicit = os.environ.get("CROWDQA_NLTK_DATA")
    if explicit:
        return Path(explicit)
    model_dir = os.environ.get("CROWDQA_MODEL_DIR")
    if model_dir:
        return Path(model_dir) / "nltk_data"
    return Path(tempfile.gettempdir()) / "crowdqa_nltk_data"


def load_wordnet(root: Optional[Path] = None) -> Any:
    """Return NLTK's WordNet corpus reader over Debian's WordNet 3.0 (loaded once per process).

    Args:
        root: NLTK data root to prepare and use; ``default_root()`` when None.

    Returns:
        ``nltk.corpus.wordnet`` (a ``WordNetCorpusReader``), already loaded.

    Raises:
        WordNetUnavailable: when the database is missing.
    """
    global _READER
    with _LOCK:
        if _READER is not None:
            return _READER
        import nltk

        root = root or default_root()
        prepare_wordnet_root(root)
        if str(root) not in nltk.data.path:
            nltk.data.path.insert(0, str(root))
        from nltk.corpus import wordnet

        wordnet.ensure_loaded()
        _READER = wordnet
        return _READER
