"""`cached`: a property computed on first read and kept on the instance.

functools.cached_property does the same, but on Python 3.11 (which the project supports) it
takes a lock on every first read, which costs several times the body of a small property;
3.12 dropped the lock. The simulator's records read dozens of such properties per layer.
Like cached_property it writes into the instance's __dict__, so it works on frozen
dataclasses, and it is not thread-safe: a race computes the value twice, with one result.
"""

from __future__ import annotations


class cached:  # noqa: N801 - used as a decorator, like property
    """A non-data descriptor: the first read calls the function and stores its value under
    the same name on the instance, where later reads find it without calling anything."""

    def __init__(self, function):
        self.function = function
        self.name = function.__name__
        self.__doc__ = function.__doc__

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.function(instance)
        return value
