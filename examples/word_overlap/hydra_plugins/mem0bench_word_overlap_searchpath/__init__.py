"""Adds this package's configs (exp/word_overlap, method/word_overlap) to every Hydra app's search path.

Hydra imports every module under the `hydra_plugins` namespace package at start-up and calls each
SearchPathPlugin; the `pkg://` path is resolved inside the installed package, wherever pip put it.
"""

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin


class WordOverlapSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="mem0bench-word-overlap", path="pkg://mem0bench_word_overlap.conf")
