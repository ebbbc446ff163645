"""Offline: recorded runs through the same pipeline the live integrations drive.

``loaders`` read trajectories of every supported agent, ``replay`` runs them through a ``Session``,
``diff`` aligns two runs, ``report`` summarises many, ``export`` turns stored sessions into trajectories."""
