"""The standing reliability suite: schema fuzzing, fault matrix, canary sweep and kill -9,
driven by the tool registry so a tool is covered the day it is registered."""
