"""What of a stepper is on screen, and the pictures that wait while they are not.

Owns ``OnScreen`` (a mixin of ``StepperUI``).  Once the stepper's widget is built, a step (``refresh()``) redraws
only the pictures a person can see: the chosen tab's picture (the partition logs, the coordinators, the messages,
a lab's own tabs) or the trace, presenter mode's picture on its stage, and every picture code has read through the
stepper (``stepper.messages``, ``log_strip``, ``coordinators``, ``lab_views``): code may have put it on the screen
anywhere (``m = s.messages`` in a cell of its own shows it there), so from then on it follows every step.  The
others are marked stale and are drawn at the current step when they come on screen again (their tab chosen,
presenter mode's toggle) or when code reads them.  Before the widget is built, code is the only reader, and every
picture it built follows every step (a check cell keeps ``strip = check.log_strip`` and reads it after each
``step_until``).  The views read the run only; this decides when, never what.
"""
from __future__ import annotations

# the tabs after the first whose picture is a view of the stepper's, by its name in ``_views``
TAB_VIEWS = {"Coordinators": "coordinators", "Messages": "messages"}


class OnScreen:
    """The pictures on screen, the stale ones and how they are brought to the current step."""

    @property
    def presenter_views(self) -> list:
        """Presenter mode's own pictures (``present()``), drawn at the current step."""
        for view in self._presenter_views:
            self._fresh(view)
        return self._presenter_views

    @presenter_views.setter
    def presenter_views(self, views: list) -> None:
        for view in self._presenter_views:                 # a second present(): the first one's pictures go
            self._stale.pop(id(view), None)
        self._presenter_views = list(views)

    def _read_by_code(self, view):
        """``view``, read from code through the stepper once its widget is built: it follows every step from now on
        (it may be on the screen outside the stepper).  Returns ``view``."""
        if "UI" in self._built and view is not None:
            self._followed[id(view)] = view
        return view

    def _built_views(self) -> list:
        """Every picture built so far: the tabs' (by name), the lab's own, presenter mode's."""
        return list(self._views.values()) + [v for _, v in self._lab_views or ()] + self._presenter_views

    def _on_screen(self) -> list:
        """The pictures a person can see now: before the widget is built, every one built (code reads them); then
        the chosen tab's picture, presenter mode's picture on its stage (once ``present()`` built it) and the
        pictures code read (``_read_by_code``)."""
        if "UI" not in self._built:
            return self._built_views()
        shown = list(self._followed.values())
        tabs = self.__dict__.get("_tabs")                  # (None while the widget is being built)
        index = tabs.selected_index if tabs is not None else None
        if index is not None:
            name = self._tab_names[index]
            if name in TAB_VIEWS or (self._kafka and index == 0):
                view = self._views.get(TAB_VIEWS.get(name, "log_strip"))
                shown += [view] if view is not None else []
            else:
                shown += [v for t, v in self._lab_views or () if t == name]
        picture = getattr(self, "presenter_picture", None)
        if picture is not None:
            shown += [v for v in self._presenter_views if getattr(v, "figure", None) is picture]
        return shown

    def _trace_on_screen(self) -> bool:
        tabs = self.__dict__.get("_tabs")
        return "Trace" in self._built and tabs is not None and tabs.selected_index == self._tab_names.index("Trace")

    def _redraw_pictures(self, c) -> None:
        """After a step: the pictures on screen redrawn from ``c`` (the lab now), the others marked stale."""
        shown = {id(v) for v in self._on_screen()}
        for view in self._built_views():
            if id(view) in shown:
                self._stale.pop(id(view), None)
                view.update(c)
            else:
                self._stale[id(view)] = view

    def _redraw_trace(self) -> None:
        """After a step: the trace tab redrawn if it is the one chosen, else marked stale (once built)."""
        if self._trace_on_screen():
            self._stale.pop("Trace", None)
            self._trace_html.value = self._trace_view()
        elif "Trace" in self._built:
            self._stale["Trace"] = True

    def _fresh(self, view) -> None:
        """Redraw ``view`` at the current step if a step passed while it was off screen."""
        if self._stale.pop(id(view), None) is not None:
            view.update(self._ex.cluster)

    def _show_current(self) -> None:
        """What came on screen (a tab chosen, presenter mode's picture picked) is drawn at the current step."""
        for view in self._on_screen():
            self._fresh(view)
        if self._trace_on_screen() and self._stale.pop("Trace", None) is not None:
            self._trace_html.value = self._trace_view()

    def _redraw_all(self) -> None:
        """Bring every picture built so far (and the trace) up to the current step, on screen or not: what every
        step did before pictures off screen waited (bench/views.py measures it)."""
        for view in self._built_views():
            self._fresh(view)
        if self._stale.pop("Trace", None) is not None:
            self._trace_html.value = self._trace_view()
