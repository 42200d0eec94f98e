"""The standing reliability suite (issue 22): schema fuzzing, fault matrix, canary sweep and kill -9,
driven by the tool registry so a tool is covered the day it is registered."""
