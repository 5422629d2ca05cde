"""Names for native frames: a module path and an offset from its load base become a function
name, and a source file and line when the module has debug information.

Two sources, both optional: the module's own ELF symbol tables (.symtab, else .dynsym), read
here with no third-party module, and addr2line (binutils) when it is on PATH and the module has
debug information (or a link to a separate debug file). A module that is gone, unreadable, not
ELF or stripped gives what it can: the frame then shows as module+offset.
"""

import bisect
import collections
import os
import shutil
import struct
import subprocess
from array import array

from .text import terminal_text

ELF_MAGIC = b"\x7fELF"
SHT_SYMTAB = 2
SHT_DYNSYM = 11
PT_LOAD = 1
STT_FUNC = 2
STT_GNU_IFUNC = 10
SHN_UNDEF = 0
# Load bases are page-aligned (glibc maps the first PT_LOAD segment from its page start).
PAGE = 4096
# What one module may cost, whatever the log names (a file with a million symbols sharing one
# huge name, the same file under several spellings): the symbols read from one table (a bound
# on time too), the bytes of its string table kept, the characters of a name, and how many
# modules' tables are held at once (the others are read again when asked for).
MAX_SYMBOLS = 1_000_000
MAX_STRINGS = 64 * 1024 * 1024
MAX_NAME = 1024
MAX_OPEN_MODULES = 4
ADDR2LINE_TIMEOUT_S = 60


class ElfError(Exception):
    pass


class ElfFile:
    """The parts of an ELF file that naming a code address needs: its type, the lowest address
    it loads at, its section names and its function symbols."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self._read(f)

    def _name(self, at):
        return _cstr(self._strings, at, MAX_NAME)

    def _read(self, f):
        self.file_size = os.fstat(f.fileno()).st_size
        ident = f.read(16)
        if len(ident) < 16 or ident[:4] != ELF_MAGIC:
            raise ElfError("not an ELF file")
        if ident[4] not in (1, 2) or ident[5] not in (1, 2):
            raise ElfError("unknown ELF class or byte order")
        self.is64 = ident[4] == 2
        self.end = "<" if ident[5] == 1 else ">"
        if self.is64:
            fmt, size = "HHIQQQIHHHHHH", 48
        else:
            fmt, size = "HHIIIIIHHHHHH", 36
        fields = struct.unpack(self.end + fmt, self._at(f, 16, size))
        (self.type, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum,
         shstrndx) = fields
        self.lowest_vaddr = self._lowest_load(f, phoff, phentsize, phnum)
        self.sections = self._sections(f, shoff, shentsize, shnum, shstrndx)
        self._f = f
        self._strings = b""
        # The defined functions, sorted by address: three columns (8 bytes a symbol each); a
        # name is read from the string table when asked for.
        self.starts, self.sizes, self.names = array("Q"), array("Q"), array("Q")
        self._functions()
        del self._f

    def _at(self, f, offset, size):
        # Sizes come from the file: checked against it before anything is read or allocated.
        if offset < 0 or size < 0 or offset + size > self.file_size:
            raise ElfError("truncated ELF file")
        f.seek(offset)
        data = f.read(size)
        if len(data) != size:
            raise ElfError("truncated ELF file")
        return data

    def _lowest_load(self, f, phoff, phentsize, phnum):
        lowest = None
        for i in range(phnum if phoff else 0):
            raw = self._at(f, phoff + i * phentsize, phentsize)
            if self.is64:
                p_type, _, _, p_vaddr = struct.unpack_from(self.end + "IIQQ", raw)
            else:
                p_type, _, p_vaddr = struct.unpack_from(self.end + "III", raw)
            if p_type == PT_LOAD and (lowest is None or p_vaddr < lowest):
                lowest = p_vaddr
        return (lowest or 0) & ~(PAGE - 1)

    def _sections(self, f, shoff, shentsize, shnum, shstrndx):
        """[(name, type, offset, size, link, entsize)]"""
        if not shoff or not shnum:
            return []
        if shnum > 65535 or shentsize < (64 if self.is64 else 40):
            raise ElfError("unexpected section header table")
        table = self._at(f, shoff, shnum * shentsize)
        raw = []
        for i in range(shnum):
            at = i * shentsize
            if self.is64:
                (name, typ, _, _, off, size, link, _, _, entsize) = struct.unpack_from(
                    self.end + "IIQQQQIIQQ", table, at)
            else:
                (name, typ, _, _, off, size, link, _, _, entsize) = struct.unpack_from(
                    self.end + "IIIIIIIIII", table, at)
            raw.append((name, typ, off, size, link, entsize))
        names = b""
        if shstrndx < len(raw):
            _, _, off, size, _, _ = raw[shstrndx]
            names = self._at(f, off, min(size, 1 << 24))
        return [(_cstr(names, n, MAX_NAME), typ, off, size, link, entsize)
                for n, typ, off, size, link, entsize in raw]

    def has_section(self, name):
        return any(s[0] == name for s in self.sections)

    def _functions(self):
        """The defined functions of .symtab, else .dynsym, into the columns, by address."""
        for wanted in (SHT_SYMTAB, SHT_DYNSYM):
            table = next((s for s in self.sections if s[1] == wanted), None)
            if table is None:
                continue
            funcs = self._symbols(table)
            if funcs:
                order = sorted(range(len(funcs[0])), key=funcs[0].__getitem__)
                for column, values in zip((self.starts, self.sizes, self.names), funcs):
                    column.extend(values[i] for i in order)
                return

    def _symbols(self, table):
        _, _, off, size, link, entsize = table
        entsize = entsize or (24 if self.is64 else 16)
        if link >= len(self.sections) or entsize < (24 if self.is64 else 16):
            return []
        count = min(size // entsize, MAX_SYMBOLS)
        _, _, str_off, str_size, _, _ = self.sections[link]
        # A name past the bytes kept reads as no name.
        self._strings = self._at(self._f, str_off, min(str_size, MAX_STRINGS))
        data = self._at(self._f, off, count * entsize)
        funcs = (array("Q"), array("Q"), array("Q"))
        for i in range(count):
            at = i * entsize
            if self.is64:
                name, info, _, shndx, value, sym_size = struct.unpack_from(
                    self.end + "IBBHQQ", data, at)
            else:
                name, value, sym_size, info, _, shndx = struct.unpack_from(
                    self.end + "IIIBBH", data, at)
            if (info & 0xF) in (STT_FUNC, STT_GNU_IFUNC) and shndx != SHN_UNDEF and value:
                funcs[0].append(value)
                funcs[1].append(sym_size)
                funcs[2].append(name)
        return funcs if funcs[0] else None

    def vaddr(self, offset):
        """The link-time address of an offset from the load base. The base is where the first
        segment is mapped: an executable linked at 0x400000 adds that; an offset already past it
        (an address minus the load bias) is taken as it is."""
        return offset + self.lowest_vaddr if offset < self.lowest_vaddr else offset

    def function_at(self, vaddr):
        """'name+0xoff' of the function holding vaddr, or None. Only a symbol whose size covers
        vaddr counts: the nearest symbol below it in a stripped module is often another
        function."""
        i = bisect.bisect_right(self.starts, vaddr)
        # A few entries back: aliases share a start, and a larger function may enclose others.
        for k in reversed(range(max(0, i - 16), i)):
            start, size = self.starts[k], self.sizes[k]
            if start <= vaddr < start + size or start == vaddr:
                return f"{self._name(self.names[k])}+{vaddr - start:#x}"
        return None


def _cstr(blob, at, limit):
    """The NUL-terminated name at at, cut to limit bytes, as a terminal may show it (the file
    is the log's choice: a name may hold a newline or an escape sequence)."""
    if at >= len(blob):
        return ""
    end = blob.find(b"\0", at, at + limit + 1)
    text = terminal_text(blob[at:end if end >= 0 else at + limit].decode("utf-8", "replace"))
    return text if end >= 0 or at + limit >= len(blob) else text + "..."


def parse_offset(text):
    """An offset as the log writes it ('0x1a2b'), or None."""
    if isinstance(text, int) and text >= 0:
        return text
    if not isinstance(text, str):
        return None
    try:
        value = int(text, 16)
    except ValueError:
        return None
    return value if value >= 0 else None


class Resolver:
    """Names frames {module, offset, symbol}, caching what it learns per module. Call
    resolve_all() with every frame first: addr2line then runs once per module."""

    def __init__(self, addr2line=None, use_addr2line=True):
        self.addr2line = addr2line or (shutil.which("addr2line") if use_addr2line else None)
        self._identity = {}  # module path -> the file's identity, or why it has none
        self._elf = collections.OrderedDict()  # identity -> ElfFile or why, the latest last
        self._lines = {}
        self._demangled = {}

    def elf(self, module):
        """The module's ElfFile, or a string saying why there is none. A file is read once
        however the log spells its path, and only the tables of the last few modules asked
        for are held."""
        identity = self._identity.get(module)
        if identity is None:
            identity = self._identity[module] = self._identify(module)
        if isinstance(identity, str):
            return identity
        if identity in self._elf:
            self._elf.move_to_end(identity)
        else:
            self._elf[identity] = self._open(module)
            if len(self._elf) > MAX_OPEN_MODULES:
                self._elf.popitem(last=False)
        return self._elf[identity]

    @staticmethod
    def _identify(module):
        """(device, inode, size, modification time) of the module's file, or why not."""
        if not isinstance(module, str) or not module:
            return "no module path"
        try:
            st = os.stat(module)
        except (OSError, ValueError):
            return "module not found" if not os.path.lexists(module) else "unreadable"
        if not os.path.isfile(module):
            return "not a regular file"
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    @staticmethod
    def _open(module):
        try:
            return ElfFile(module)
        except (OSError, ElfError, struct.error, MemoryError) as e:
            return getattr(e, "strerror", None) or str(e) or "unreadable"

    def _has_debug_info(self, elf):
        return elf.has_section(".debug_info") or elf.has_section(".gnu_debuglink")

    def resolve_all(self, frames):
        """Runs addr2line once per module with debug information for the offsets of frames."""
        if not self.addr2line:
            return
        wanted = {}
        for fr in frames:
            module, offset = fr.get("module"), parse_offset(fr.get("offset"))
            if offset is None or (module, offset) in self._lines:
                continue
            elf = self.elf(module)
            if isinstance(elf, ElfFile) and self._has_debug_info(elf):
                wanted.setdefault(module, set()).add(offset)
        for module, offsets in wanted.items():
            self._run_addr2line(module, sorted(offsets))

    def _run_addr2line(self, module, offsets):
        elf = self.elf(module)
        args = [self.addr2line, "-f", "-C", "-e", module] + [
            f"{elf.vaddr(o):#x}" for o in offsets]
        try:
            out = subprocess.run(args, capture_output=True, text=True, errors="replace",
                                 timeout=ADDR2LINE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            out = None
        lines = out.stdout.splitlines() if out and out.returncode == 0 else []
        for i, offset in enumerate(offsets):
            function, where = (lines[2 * i:2 * i + 2] + ["??", "??:0"])[:2]
            function = None if function.strip() in ("", "??") else function.strip()
            where = where.split(" (discriminator")[0].strip()
            if where.startswith("??") or where.endswith(":0") or where.endswith(":?"):
                where = None
            self._lines[(module, offset)] = (function, where)

    def demangle(self, name):
        if not name.startswith("_Z"):
            return name
        if name not in self._demangled:
            tool = shutil.which("c++filt")
            text = name
            if tool:
                try:
                    text = subprocess.run([tool, name], capture_output=True, text=True,
                                          timeout=10).stdout.strip() or name
                except (OSError, subprocess.SubprocessError):
                    pass
            self._demangled[name] = text
        return self._demangled[name]

    def describe(self, frame):
        """(function or None, 'file:line' or None, note or None) for one native frame. The
        function is the log's symbol when it has one, else addr2line's, else the ELF tables'."""
        module, offset = frame.get("module"), parse_offset(frame.get("offset"))
        symbol = frame.get("symbol") if isinstance(frame.get("symbol"), str) else None
        function, where = self._lines.get((module, offset), (None, None))
        note = None
        if symbol is None and function is None and offset is not None:
            elf = self.elf(module)
            if isinstance(elf, ElfFile):
                named = elf.function_at(elf.vaddr(offset))
                if named:
                    base, _, off = named.rpartition("+")
                    function = f"{self.demangle(base)}+{off}"
                else:
                    note = "no symbol"
            else:
                note = elf
        return symbol or function, where, note

    def text(self, frame):
        """One line for a native frame: 'function at file:line', 'symbol', or
        'module+offset (why)'."""
        function, where, note = self.describe(frame)
        module = frame.get("module") or "?"
        offset = frame.get("offset") or "?"
        if function:
            return f"{function} at {where}" if where else f"{function}  ({module})"
        if where:
            return f"{module}+{offset} at {where}"
        return f"{module}+{offset}" + (f" ({note})" if note else "")

    def name(self, frame):
        """The function name alone (no offset), or None."""
        function, _, _ = self.describe(frame)
        if not function:
            return None
        return function.split("+0x")[0]
