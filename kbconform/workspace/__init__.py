"""Workspaces: registry configuration, scanning into parsed-chunk-v1 records, golden fixtures."""

from kbconform.workspace._config import Config, load_config, read_config
from kbconform.workspace._scan import scan

__all__ = ["Config", "load_config", "read_config", "scan"]
