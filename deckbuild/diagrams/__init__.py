"""Generated diagrams: a project's matplotlib generators (its diagrams/ folder) and a
content-addressed cache.

Importing this package is cheap on purpose: it never imports matplotlib or numpy.  A
rebuild in which no diagram changed must not pay matplotlib's import time, so everything
here (validation, cache keys, cache look-ups) works from the registry, read from the
generators' source with ast, and from their *source bytes*; a generator runs only when
something has to be drawn.

The file name of a rendered diagram is ``<name>-<12 hex of sha256(png)>.png``: changing
a diagram's parameters (or its code) changes the picture and therefore the file name, so
Anki, which never overwrites a media file of the same name, picks the new picture up.

The modules, one job each: api (the @diagram decorator a project's generators declare
themselves with), registry (what a project can draw, read statically), validation (a spec
against it), keys (cache keys), cache (materialize), pool (the drawing workers), rendering
(one picture in this process), style (the house style generators draw with; imports
matplotlib).  This package module imports none of them (importing any of them runs it first,
so a re-export would close a circle): import a name from the module that defines it.
"""
