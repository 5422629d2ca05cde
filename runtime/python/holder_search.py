# What keeps a growing process's memory: the containers, reachable from roots a person knows,
# whose contents grow from round to round. Run inside the observed process by roundtrim's helper
# thread with the GIL held (runtime/python/holders.c), a bounded number of objects per call, so
# that a walk of the program's objects is spread over rounds.
#
# No import, no attribute set on the program's objects, nothing allocated that outlives a call
# but this walk's own state: what is read is read with getattr on instance dictionaries and
# len() on built-in containers, never a property or a method of the program's classes (which
# could run the program's code).
#
# Roots: the program's own modules (their file outside the interpreter's library and
# site-packages), the classes they define, the loggers of `logging`, and the locals of the
# threads' frames in the program's files. From a root a path of attributes, keys and items is
# followed a few levels down; each built-in container met is a candidate, named by its path.
# A holder is a candidate whose length grew over the last walks, never shrinking.


def roundtrim_holder_search():
    import_free_builtins = (len, id, type, isinstance, getattr, sorted, min, max, repr, str,
                            int, float, dict, list, set, tuple, frozenset, object)
    (len_, id_, type_, isinstance_, getattr_, sorted_, min_, max_, repr_, str_, int_, float_,
     dict_, list_, set_, tuple_, frozenset_, object_) = import_free_builtins
    sys = __import__("sys")  # built in and loaded in every interpreter: nothing is imported
    getsizeof = sys.getsizeof

    DEPTH = 4  # levels followed below a root
    ITEMS = 3  # items followed into at each end of a sequence, keys of a mapping
    KEYS = 64
    WALKS_KEPT = 8  # the walks a growth is read over
    GROWING_WALKS = 3  # the fewest walks a holder is seen in, rising between all but one
    SIZE_OBJECTS = 2000  # objects looked at to size one item
    # Below an item, an object referred to from this many places is shared (an interned
    # string, a small int, a module's constant): the item does not keep it.
    SHARED_REFS = 8
    ROOT_OBJECTS = 5000  # objects followed from one root
    DATA_TYPES = ("ndarray", "Tensor", "Parameter", "bytes", "bytearray", "memoryview")

    containers = (list_, dict_, set_, frozenset_)
    library = tuple_(p for p in (getattr_(sys, "prefix", None), getattr_(sys, "base_prefix", None),
                                 getattr_(sys, "exec_prefix", None)) if p)

    # Packages that are not the program even where they run from a source tree: the
    # frameworks' and the numeric libraries' own state is walked only as far as the program's
    # objects lead into it.
    FRAMEWORKS = ("nvflare", "flwr", "appfl", "torch", "numpy", "jax", "tensorflow", "cupy",
                  "pandas", "scipy", "sklearn")
    framework_dirs = tuple_("/" + name + "/" for name in FRAMEWORKS)

    def program_file(filename):
        if not filename or filename.startswith("<"):
            return False
        if "site-packages" in filename or "dist-packages" in filename:
            return False
        if any(filename.startswith(p + "/lib") for p in library):
            return False
        return not any(d in filename for d in framework_dirs)

    def plain(o):
        """A container of the interpreter's own (built in, or from collections): its length and
        items are read without running any code of the program's (a subclass may define
        __len__ or items())."""
        t = type_(o)
        return t in containers or (t.__module__ == "collections" and t.__name__ in (
            "deque", "OrderedDict", "defaultdict", "Counter"))

    is_container = plain

    def instance_dict(o):
        # the object's own __dict__, read without running any of its code
        try:
            d = object_.__getattribute__(o, "__dict__")
        except Exception:
            return None
        return d if type_(d) is dict_ else None

    # The program's modules by name, found again only when modules were added or removed: a
    # process with a framework imported has thousands, a handful of them the program's.
    program_modules = {"count": -1, "names": ()}

    def program_module_names(modules):
        if len_(modules) != program_modules["count"]:
            names = []
            for name, mod in list_(modules.items()):
                d = instance_dict(mod) if mod is not None else None
                if d is None:
                    continue
                f = d.get("__file__")
                if name == "__main__" or (name.split(".", 1)[0] not in FRAMEWORKS and
                                          program_file(f if type_(f) is str_ else None)):
                    names.append(name)
            program_modules["count"] = len_(modules)
            program_modules["names"] = tuple_(names)
        return program_modules["names"]

    def roots():
        out = []
        modules = sys.modules
        for name in program_module_names(modules):
            mod = modules.get(name)
            d = instance_dict(mod) if mod is not None else None
            if d is None:
                continue
            for key, value in list_(d.items()):
                if type_(key) is not str_ or key.startswith("__"):
                    continue
                tv = type_(value)
                if tv is type_(sys):
                    continue
                if isinstance_(value, type_):
                    if getattr_(value, "__module__", None) == name:
                        cd = getattr_(value, "__dict__", None)
                        if cd is not None:
                            for ck, cv in list_(cd.items()):
                                if type_(ck) is str_ and not ck.startswith("__"):
                                    out.append((name + "." + key + "." + ck, cv))
                    continue
                out.append((name + "." + key, value))
        logging = modules.get("logging")
        manager = getattr_(getattr_(logging, "Logger", None), "manager", None)
        loggers = getattr_(manager, "loggerDict", None)
        if type_(loggers) is dict_:
            for lname, logger in list_(loggers.items()):
                ld = instance_dict(logger)
                if ld is not None and type_(ld.get("handlers")) is list_:
                    out.append(("logging.getLogger(%r).handlers" % (lname,), ld["handlers"]))
            root = getattr_(logging, "root", None)
            rd = instance_dict(root)
            if rd is not None and type_(rd.get("handlers")) is list_:
                out.append(("logging.getLogger().handlers", rd["handlers"]))
        # The locals of the threads' frames in the program's files. Before 3.13 reading a
        # running function's f_locals copies its locals into a dictionary the frame keeps,
        # which keeps objects alive the program let go (and frees others later than it would):
        # there, only 3.13's f_locals, a view that copies nothing, is read.
        if sys.version_info >= (3, 13):
            frames = sys._current_frames()
            for tid, frame in list_(frames.items()):
                f = frame
                while f is not None:
                    code = f.f_code
                    if code.co_name != "<module>" and program_file(code.co_filename):
                        where = "%s() in %s" % (code.co_name,
                                                code.co_filename.rsplit("/", 1)[-1])
                        for lname, value in list_(f.f_locals.items()):
                            if type_(lname) is str_:
                                out.append(("local %s of %s" % (lname, where), value))
                    f = f.f_back
            del frames
        return out

    def first(iterable, n):
        """Up to n items of a container however large, without copying it (a finalizer the
        walk's own allocations set off may change it: what was read is kept)."""
        out = []
        try:
            for item, _ in zip(iterable, range(n)):
                out.append(item)
        except RuntimeError:
            pass
        return out

    def children(path, o):
        """(path, child) pairs of o to follow."""
        t = type_(o)
        if t is type_(sys) or isinstance_(o, type_):
            return ()
        out = []
        if isinstance_(o, dict_) and plain(o):
            for k, v in first(o.items(), KEYS):
                label = "[%s]" % (repr_(k)[:40],) if type_(k) in (str_, int_) else "[...]"
                out.append((path + label, v))
            return out
        if type_(o) in (list_, tuple_):
            n = len_(o)
            picks = range(n) if n <= 2 * ITEMS else list_(range(ITEMS)) + list_(range(n - ITEMS, n))
            return [("%s[%d]" % (path, i), o[i]) for i in picks]
        if t.__name__ == "deque" and plain(o):
            # by index: a deque's ends are read at once, where a copy would take its length
            n = len_(o)
            picks = range(n) if n <= 2 * ITEMS else list_(range(ITEMS)) + list_(range(n - ITEMS, n))
            return [("%s[%d]" % (path, i), o[i]) for i in picks]
        if t.__name__ in ("function", "method"):
            func = getattr_(o, "__func__", o)
            self_ = getattr_(o, "__self__", None)
            if self_ is not None and t.__name__ == "method":
                out.append((path + ".__self__", self_))
            cells = getattr_(func, "__closure__", None)
            names = getattr_(getattr_(func, "__code__", None), "co_freevars", ())
            if cells:
                for name, cell in zip(names, cells):
                    try:
                        out.append(("%s.<closure %s>" % (path, name), cell.cell_contents))
                    except ValueError:
                        pass
            return out
        d = instance_dict(o)
        if d is not None and t.__module__ != "builtins":
            for k, v in list_(d.items()):
                if type_(k) is str_:
                    out.append((path + "." + k, v))
        return out

    def deep_size(o):
        """About the bytes o keeps: its own, and what it holds a few levels down (arrays by
        their data, a traceback by its frames' locals)."""
        seen = set_()
        todo = [(o, 0)]
        total = 0
        looked = 0
        while todo and looked < SIZE_OBJECTS:
            x, level = todo.pop()
            if id_(x) in seen or x is None or isinstance_(x, type_) or type_(x) is type_(sys):
                continue
            if level > 0 and sys.getrefcount(x) > SHARED_REFS:
                continue
            seen.add(id_(x))
            looked += 1
            try:
                own = getsizeof(x)
            except Exception:
                own = 0
            nbytes = getattr_(x, "nbytes", None) if type_(x).__name__ == "ndarray" else None
            if type_(nbytes) is int_:
                # an array that owns its data counts it in its own size; a view does not
                total += own if own >= nbytes else own + nbytes
                continue
            total += own
            if type_(x).__name__ in ("Tensor", "Parameter"):
                try:
                    total += x.nelement() * x.element_size()
                except Exception:
                    pass
                continue
            if level >= 6:
                continue
            if isinstance_(x, dict_) and plain(x):
                for k, v in first(x.items(), 256):
                    todo.append((v, level + 1))
            elif type_(x) in (list_, tuple_, set_, frozenset_) or (
                    plain(x) and type_(x).__name__ == "deque"):
                for v in first(x, 256):
                    todo.append((v, level + 1))
            elif type_(x).__name__ == "function":
                # a callback keeps what its defaults and its closure hold
                for v in (getattr_(x, "__defaults__", None) or ()):
                    todo.append((v, level + 1))
                for cell in (getattr_(x, "__closure__", None) or ()):
                    try:
                        todo.append((cell.cell_contents, level + 1))
                    except ValueError:
                        pass
            elif type_(x).__name__ == "method":
                # a bound method keeps its object
                todo.append((getattr_(x, "__self__", None), level + 1))
            elif isinstance_(x, BaseException):
                # what its traceback's frames keep alive: their arrays and buffers (the frames'
                # other locals are the program's own state, reachable without it)
                tb = x.__traceback__
                while tb is not None:
                    for v in list_(tb.tb_frame.f_locals.values()):
                        if type_(v).__name__ in DATA_TYPES:
                            todo.append((v, level + 1))
                    tb = tb.tb_next
                for v in x.args:
                    todo.append((v, level + 1))
            else:
                d = instance_dict(x)
                if d is not None:
                    for v in list_(d.values()):
                        todo.append((v, level + 1))
        return total

    def last_item(o):
        if isinstance_(o, dict_):  # plain: only containers of the interpreter's own come here
            return next(reversed(o.values())) if len_(o) else None
        if isinstance_(o, (list_, tuple_)) or type_(o).__name__ == "deque":
            return o[-1] if len_(o) else None
        return None

    # Between calls the walk keeps no reference to the program's objects (that would keep
    # alive what the program let go): only the paths of the roots still to walk, and numbers.
    state = {"roots": None, "found": None, "objects": 0, "walks": 0,
             "series": {}}

    def walk_root(path, value, seen, found, previous):
        """Follows one root's paths DEPTH levels down; returns the objects looked at."""
        todo = [(path, value, 0)]
        looked = 0
        while todo and looked < ROOT_OBJECTS:
            path, o, level = todo.pop()
            key = id_(o)
            if key in seen:
                continue
            seen.add(key)
            looked += 1
            if is_container(o) and path not in found:
                n = len_(o)
                # only what grew since the last walk is worth sizing
                before = previous.get(path)
                item = last_item(o) if before is not None and before[1][-1][1] < n else None
                found[path] = (n, type_(o).__name__, deep_size(item) if item is not None else 0)
            if level < DEPTH:
                for child in reversed(children(path, o)):
                    if id_(child[1]) not in seen:
                        todo.append((child[0], child[1], level + 1))
        return looked

    def remember(round_no, found):
        """Adds a walk to the series kept per path, and keeps only the paths that may still be
        holders: those that grew over the walks kept (never shrinking)."""
        series = state["series"]
        for path, (n, ref_type, item_bytes) in found.items():
            entry = series.get(path)
            if entry is None or entry[0] != ref_type:
                if entry is None and state["walks"] > 0 and n == 0:
                    continue  # empty and new: nothing to follow yet
                entry = series[path] = [ref_type, [], 0]
            entry[1].append((round_no, n))
            del entry[1][:-WALKS_KEPT]
            entry[2] = item_bytes or entry[2]
        for path in list_(series):
            points = series[path][1]
            if path not in found or any(b[1] < a[1] for a, b in zip(points, points[1:])) or (
                    len_(points) >= GROWING_WALKS and points[-1][1] == points[0][1]):
                del series[path]  # gone, shrank, or flat over the walks kept
        state["walks"] += 1

    def holders():
        """The paths that grew over the walks kept, never shrinking, rising between at least
        GROWING_WALKS - 1 of them (a walk can fall between two of the program's appends, or
        see two at once), largest first."""
        out = []
        for path, (ref_type, points, item_bytes) in state["series"].items():
            if len_(points) < GROWING_WALKS:
                continue
            rises = sum(1 for a, b in zip(points, points[1:]) if b[1] > a[1])
            rounds = points[-1][0] - points[0][0]
            if rises < GROWING_WALKS - 1 or rounds <= 0:
                continue
            per_round = (points[-1][1] - points[0][1]) / float_(rounds)
            out.append((path, ref_type, points[-1][1], int_(per_round * 1000),
                        int_(per_round * item_bytes)))
        out.sort(key=lambda h: (h[4], h[3]), reverse=True)
        return tuple_(out[:5])

    def step(round_no, max_objects):
        """Walks on for about max_objects objects (a root is always walked whole). Returns None
        while the walk goes on, else (objects walked, holders): holders as (path, type, length,
        thousandths of an item a round, bytes a round)."""
        all_roots = roots()
        if state["roots"] is None:
            state["roots"] = sorted_(set_(path for path, _ in all_roots), reverse=True)
            state["found"] = {}
            state["objects"] = 0
        # objects looked at in this call only: a set of every object of a walk spread over
        # rounds would be the largest thing the search keeps
        todo, seen, found = state["roots"], set_(), state["found"]
        by_path = dict_(all_roots)
        previous = state["series"]
        del all_roots
        budget = max_objects
        while todo and budget > 0:
            path = todo.pop()
            if path in by_path:  # a frame that returned, a global deleted: gone
                budget -= walk_root(path, by_path[path], seen, found, previous)
        del by_path
        state["objects"] += max_objects - budget
        if todo:
            return None
        walked = state["objects"]
        remember(round_no, found)
        state["roots"] = state["found"] = None
        return (walked, holders())

    return step
