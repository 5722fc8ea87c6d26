"""The live contexts and partitions by name: one structure for both kinds (``sched.get_context`` /
``get_partition``, ``list_*``, ``destroy_*`` and the name checks of ``create_*`` are its methods for one kind)."""

__all__ = ["Registry"]


class Registry:
    """The live objects of one kind (``"context"``, ``"partition"``) by their ``name``, in creation order.

    Its errors name the kind: ``TypeError`` for a name that is not a non-empty string, ``ValueError`` for a name
    taken, ``KeyError`` for a name not live. Call with the scheduler's LOCK held, except :meth:`check_name`.
    """

    __slots__ = ("kind", "_live")

    def __init__(self, kind):
        self.kind = kind
        self._live = {}  # name -> object

    def check_name(self, name):
        """``TypeError`` unless ``name`` is a non-empty string."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"{self.kind} name must be a non-empty string, got {name!r}")

    def check_new(self, name):
        """``ValueError`` if a live object is named ``name``."""
        if name in self._live:
            raise ValueError(f"a {self.kind} named {name!r} already exists")

    def add(self, obj):
        """Enter ``obj`` under its name."""
        self._live[obj.name] = obj

    def discard(self, obj):
        """Remove ``obj`` if it is the live object of its name."""
        if self._live.get(obj.name) is obj:
            del self._live[obj.name]

    def get(self, name):
        """The live object named ``name``; ``KeyError`` if there is none."""
        try:
            return self._live[name]
        except KeyError:
            raise KeyError(f"no {self.kind} named {name!r}") from None

    def resolve(self, name_or_obj):
        """The live object named ``name_or_obj`` when it is a string, else the object itself; ``KeyError`` for a
        name not live (and for None)."""
        obj = self._live.get(name_or_obj) if isinstance(name_or_obj, str) else name_or_obj
        if obj is None:
            raise KeyError(f"no {self.kind} named {name_or_obj!r}")
        return obj

    def values(self):
        """The live objects, in creation order (a new list)."""
        return list(self._live.values())
