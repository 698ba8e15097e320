"""GitHub integration: a REST client that files compiler failures as issues without ever opening duplicates.

:class:`GitHub` talks to github.com or GitHub Enterprise; its :meth:`~GitHub.open_or_find` and
:meth:`~GitHub.comment_once` are safe to re-run after any failure. See :mod:`dlgate.github.client`.
"""
from dlgate.github.client import GitHub, GitHubError, UncertainWrite

__all__ = ["GitHub", "GitHubError", "UncertainWrite"]
