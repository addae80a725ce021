"""Generated diagrams: a registry of matplotlib generators and a content-addressed cache.

Importing this package is cheap on purpose: it never imports matplotlib or numpy.  A
rebuild in which no diagram changed must not pay matplotlib's import time, so everything
here (validation, cache keys, cache look-ups) works from the registry and from the
generators' *source bytes*; the generator modules are imported only when something has to
be rendered.

The file name of a rendered diagram is ``<name>-<12 hex of sha256(png)>.png``: changing
a diagram's parameters (or its code) changes the picture and therefore the file name, so
Anki, which never overwrites a media file of the same name, picks the new picture up.

The modules, one job each: registry (what can be drawn), validation (a spec against it),
keys (cache keys), cache (materialize), pool (the drawing workers), rendering (one
picture in this process), _style (the house style; imports matplotlib).  This package module
imports none of them (importing any of them runs it first, so a re-export would close a circle):
import a name from the module that defines it.
"""
