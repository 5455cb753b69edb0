"""The small library every ax tool shares.

Import the submodule you need (``from libcommon.paths import state_layout``);
this package root only carries the distribution version so that ``--version``
never pays for more than it prints.
"""

__version__ = "0.1.0"
