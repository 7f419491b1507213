"""Integrations of parity.capture with training frameworks (imported on demand; each module imports its
framework lazily, so `import parity` never pulls them in)."""
