"""Callbacks that put joules' energy into a framework's own logs.

``joules.integrations.transformers.JoulesCallback`` (Hugging Face ``Trainer``),
``joules.integrations.lightning.JoulesCallback`` (Lightning ``Trainer``) and
``joules.integrations.keras.JoulesCallback`` (Keras ``fit``).  Each module imports its framework,
so import only the one you use."""
