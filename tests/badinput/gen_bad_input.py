#!/usr/bin/env python3
"""Generate the bad-input test of libredist's public API from its headers.

    gen_bad_input.py --out FILE.c --group NAME [--null-only]
                     [--known HEADER...] HEADER...

Every function declared in the given headers gets, in the generated C:

  1. an all-NULL call: every pointer argument NULL, every other argument a
     plain value.  The result must be the one the header documents: a
     function returning redist_status_t gives REDIST_ERR_INVALID unless its
     comment says "NULL: VALUE"; any other non-void function must say
     "NULL: VALUE" (or "NULL or out of range: VALUE") in its comment, and
     gives exactly that.
  2. one call per pointer argument with that argument NULL and the others
     valid fixtures (skipped with --null-only, and for *_free functions).
  3. calls with garbage: each scalar argument in turn takes out-of-range
     values (enums past their count, negative counts, ndims 17, axis 200,
     unknown flags...), and each input structure in turn a malformed one (a
     type with ndims 17 or axis 200, a step with op 77, a cost model with a
     NaN, bytes 0xA5 everywhere).  A status function must fail on a value
     marked bad; a function whose comment says "out of range: VALUE" must
     return it.

Every call must return without crashing (the suite runs under ASan and
UBSan too); a status function must report a known status, and when it is
given an error struct, set it exactly when it fails, to the status it
returns, with a message; `**out` must be written on success only.

The build fails (this script exits 1) when a header holds a declaration it
cannot parse, a function whose parameter types it has no rule for, a
non-status function without its "NULL:" comment, or when a header of the
directory is in no group (--known): a new function or header cannot skip
the test.
"""
import argparse
import os
import re
import sys


class GenError(Exception):
    pass


# ------------------------------------------------------------------ parsing

def blank(m):
    return re.sub(r'[^\n]', ' ', m.group(0))


def strip_code(text):
    """Comments, preprocessor lines and C++ guards blanked out, positions
    kept (so statements map back to the text and its comments)."""
    text = re.sub(r'#ifdef __cplusplus.*?#endif', blank, text, flags=re.S)
    text = re.sub(r'/\*.*?\*/', blank, text, flags=re.S)
    text = re.sub(r'//[^\n]*', blank, text)
    text = re.sub(r'^[ \t]*#[^\n]*(?:\\\n[^\n]*)*', blank, text, flags=re.M)
    return text


class Param:
    def __init__(self, text):
        m = re.match(r'^(.*?)\b(\w+)\s*(\[\s*\])?$', text.strip())
        if not m or not m.group(1).strip():
            raise GenError('cannot parse parameter "%s"' % text)
        t = ' '.join(m.group(1).split())
        t = re.sub(r'\s*(\*+)\s*', r' \1', t).strip()
        self.type = t + ('[]' if m.group(3) else '')
        self.name = m.group(2)


class Proto:
    def __init__(self, header, ret, name, params, doc):
        self.header = header
        self.ret = re.sub(r'\s*(\*+)\s*', r' \1',
                          ' '.join(ret.split())).strip()
        self.name = name
        self.params = params
        # the comment's words, without its decoration
        doc = re.sub(r'/\*+<?|\*+/', ' ', doc)
        doc = ' '.join(re.sub(r'^\s*\*+', ' ', ln) for ln in doc.split('\n'))
        self.doc = ' '.join(doc.split())
        self.null_value = None   # "NULL: V"
        self.range_value = None  # "out of range: V"
        for m in re.finditer(
                r'(NULL(?: or (?:out of range|invalid))?|[Oo]ut of range|'
                r'[Ii]nvalid)\s*:\s*'
                r'("(?:[^"\\]|\\.)*"|-?\d+|[A-Z][A-Z0-9_]*\b|zeros\b)',
                self.doc):
            key, val = m.group(1), m.group(2)
            if self.ret == 'redist_status_t' and \
                    not val.startswith('REDIST_ERR_'):
                continue  # prose such as 'dtype (NULL: "f32")'
            if key.startswith('NULL'):
                self.null_value = val
            if 'out of range' in key.lower() or 'invalid' in key.lower():
                self.range_value = val


STRUCTS = {}  # typedef name -> member names (for "zeros" results)


def parse_structs(code):
    for m in re.finditer(r'typedef\s+struct\s+\w*\s*\{(.*?)\}\s*(\w+)\s*;',
                         code, flags=re.S):
        names = []
        for decl in m.group(1).split(';'):
            decl = re.sub(r'\[[^\]]*\]', '', ' '.join(decl.split()))
            if not decl:
                continue
            first, *rest = decl.split(',')
            names.append(first.split()[-1].lstrip('*'))
            names += [r.strip().lstrip('*') for r in rest]
        STRUCTS[m.group(2)] = names


def parse_header(path):
    text = open(path).read()
    code = strip_code(text)
    parse_structs(code)
    protos = []
    depth = 0
    start = 0
    prev_end = None
    for i, ch in enumerate(code):
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
        elif ch == ';' and depth == 0:
            stmt = code[start:i + 1]
            s0 = start + (len(stmt) - len(stmt.lstrip()))
            flat = ' '.join(stmt.split())
            start = i + 1
            if (not flat or flat.startswith('typedef') or
                    flat.startswith('enum') or '(' not in flat):
                prev_end = None
                continue
            flat = re.sub(r'^REDIST_API\s+', '', flat)  # the export mark
            m = re.match(r'^(.*?)\b(redist_\w+)\s*\((.*)\)\s*;$', flat)
            if not m:
                raise GenError('%s: cannot parse declaration "%s"'
                               % (os.path.basename(path), flat))
            plist = [p for p in m.group(3).split(',')]
            params = [] if m.group(3).strip() in ('', 'void') else \
                [Param(p) for p in plist]
            doc = own_doc(text, s0, i + 1)
            if doc is None and prev_end is not None and \
                    '\n\n' not in text[prev_end[0]:s0].replace(' ', ''):
                doc = prev_end[1]  # one comment above several prototypes
            doc = doc or ''
            protos.append(Proto(os.path.basename(path), m.group(1),
                                m.group(2), params, doc))
            prev_end = (i + 1, doc)
    # every redist_ function name in the code must be a parsed prototype
    names = {p.name for p in protos}
    for m in re.finditer(r'\b(redist_\w+)\s*\(', code):
        if m.group(1) not in names:
            raise GenError('%s: %s( is not a declaration this script can '
                           'read' % (os.path.basename(path), m.group(1)))
    return protos


def own_doc(text, s0, end):
    """The comment right above the statement, or a trailing one on its
    line."""
    before = text[:s0].rstrip()
    doc = None
    if before.endswith('*/'):
        j = before.rfind('/*')
        gap = text[len(before):s0]
        if j >= 0 and gap.count('\n') <= 1:
            doc = before[j:]
    line_end = text.find('\n', end)
    tail = text[end:line_end if line_end >= 0 else len(text)]
    m = re.match(r'\s*(/\*.*?\*/)', tail)
    if m:
        doc = (doc or '') + m.group(1)
    return doc


# ------------------------------------------------------------------ rules

SENTINEL = '((void *)&g_sentinel)'

HANDLES = {  # out handle type -> free function (None: NULL pass only)
    'redist_mesh_t': 'redist_mesh_free',
    'redist_spec_t': 'redist_spec_free',
    'redist_plan_t': 'redist_plan_free',
    'redist_sim_t': 'redist_sim_free',
    'redist_topo_t': 'redist_topo_free',
    'redist_placement_t': 'redist_placement_free',
    'redist_mpi_t': None,
    'redist_shmem_t': None,
    'redist_mpi_prepared_t': None,
    'redist_mpi_meshes_t': None,
    'redist_shmem_prepared_t': None,
    'redist_shmem_meshes_t': None,
    'redist_arrays_t': 'redist_arrays_free',
    'redist_plan_set_t': 'redist_plan_set_free',
    'redist_set_prepared_t': None,
}

OUT_STRUCTS = {
    'redist_dtype_t', 'redist_reduce_t', 'redist_op_t', 'redist_link_t',
    'redist_exec_info_t', 'redist_exec_report_t', 'redist_plan_stats_t',
    'redist_expect_t', 'redist_step_view_t', 'redist_verify_result_t',
    'redist_topo_info_t', 'redist_topo_location_t', 'redist_topo_axis_t',
    'redist_mpi_info_t', 'redist_shmem_info_t', 'redist_split_t',
    'redist_round_stats_t', 'redist_plan_set_stats_t',
}

ENUMS = {  # enum -> (valid, count constant)
    'redist_dtype_t': ('REDIST_F32', 'REDIST_DTYPE_COUNT'),
    'redist_reduce_t': ('REDIST_REDUCE_SUM', 'REDIST_REDUCE_COUNT'),
    'redist_op_t': ('REDIST_OP_SLICE', 'REDIST_OP_COUNT'),
    'redist_link_t': ('REDIST_LINK_NODE', 'REDIST_LINK_COUNT'),
    'redist_split_t': ('REDIST_SPLIT_CEIL', 'REDIST_SPLIT_COUNT'),
}

INT_MIN_S = 'INT_MIN'
INT_MAX_S = 'INT_MAX'


class Arg:
    """How one parameter is passed in each pass."""

    def __init__(self, null, valid, garbage=(), ptr=True, decl=(), post=(),
                 null_only=False):
        self.null = null
        self.valid = valid
        self.garbage = list(garbage)  # (expr, bad)
        self.ptr = ptr
        self.decl = list(decl)
        self.post = list(post)
        self.null_only = null_only


def rule(proto, p, idx):
    """The Arg of parameter p (index idx) of proto, or GenError."""
    t, n, f = p.type, p.name, proto.name
    v = 'a%d' % idx  # local variable name in a call block

    # ---- out handles
    m = re.match(r'^(redist_\w+_t) \*\*$', t)
    if m and m.group(1) in HANDLES:
        h = m.group(1)
        free = HANDLES[h]
        if free is None:
            return Arg('NULL', '&' + v, null_only=True,
                       decl=['%s *%s = %s;' % (h, v, SENTINEL)])
        return Arg('NULL', '&' + v,
                   decl=['%s *%s = %s;' % (h, v, SENTINEL)],
                   post=['out_handle(st_, (void *)%s);' % v,
                         'if (st_ == REDIST_OK && (void *)%s != %s) '
                         '%s(%s);' % (v, SENTINEL, free, v)])
    # ---- the error struct
    if t == 'redist_error_t *':
        return Arg('NULL', '&e_')
    if t == 'const redist_error_t *':
        return Arg('NULL', '&g_err', [('&g_bad_err', False)])
    # ---- one report per device of the fixture plan (8 devices)
    if t == 'redist_exec_report_t *' and n == 'per_device':
        return Arg('NULL', v, decl=['redist_exec_report_t %s[8];' % v])
    # ---- plain output structs
    m = re.match(r'^(redist_\w+_t) \*$', t)
    if m and m.group(1) in OUT_STRUCTS:
        return Arg('NULL', '&' + v, decl=['%s %s;' % (m.group(1), v),
                                         'memset(&%s, 0, sizeof %s);'
                                         % (v, v)])
    # ---- objects
    objects = {
        'const redist_mesh_t *': ('g_mesh', []),
        'const redist_spec_t *': ('g_spec', []),
        'const redist_plan_t *': ('g_plan', []),
        'const redist_backend_t *': ('g_be', []),
        'redist_backend_t *': ('g_be', []),
        'redist_sim_t *': ('g_sim', []),
        'const redist_topo_t *': ('g_topo', []),
        'const redist_placement_t *': ('g_pl', []),
        'FILE *': ('g_devnull', []),
        'const redist_arrays_t *': ('g_arrays', []),
        'const redist_plan_set_t *': ('g_set', []),
    }
    if t in objects and not f.endswith('_free'):
        return Arg('NULL', objects[t][0])
    if f.endswith('_free') and len(proto.params) == 1:
        return Arg('NULL', 'NULL', null_only=True)
    if t in ('redist_mpi_t *', 'const redist_mpi_t *', 'redist_shmem_t *',
             'const redist_shmem_t *', 'const redist_mpi_options_t *',
             'const redist_shmem_options_t *', 'const void *',
             'redist_mpi_prepared_t *', 'const redist_mpi_prepared_t *',
             'redist_mpi_meshes_t *', 'redist_shmem_meshes_t *',
             'const redist_mpi_meshes_t *', 'const redist_shmem_meshes_t *',
             'redist_shmem_prepared_t *',
             'const redist_shmem_prepared_t *',
             'redist_set_prepared_t *', 'const redist_set_prepared_t *'):
        return Arg('NULL', 'NULL', null_only=True)
    if t == 'int *' and n in ('done', 'mine'):
        return Arg('NULL', '&' + v, decl=['int %s = 0;' % v])
    if t == 'uint64_t *' and n == 'out':
        return Arg('NULL', '&' + v, decl=['uint64_t %s = 0;' % v])
    # ---- caller-filled values
    if t == 'const redist_type_t *':
        return Arg('NULL', '&g_from',
                   [('&g_bad_types[%d]' % k, True) for k in range(6)])
    if t == 'redist_type_t *':
        kind = 'out' if f == 'redist_type_init' else 'in'
        return Arg('NULL', '&' + v,
                   [('&' + v + 'g', kind == 'in')],
                   decl=['redist_type_t %s = g_from;' % v,
                         'redist_type_t %sg = g_bad_types[0];' % v])
    if t == 'const redist_step_view_t[]':
        return Arg('NULL', 'g_steps',
                   [('g_bad_steps[%d]' % k, True) for k in range(5)])
    if t == 'const redist_cost_model_t *':
        return Arg('NULL', '&g_cost',
                   [('&g_bad_costs[%d]' % k, True) for k in range(4)])
    if t == 'redist_cost_model_t *':
        return Arg('NULL', '&' + v, [('&' + v + 'g', False)],
                   decl=['redist_cost_model_t %s = g_cost;' % v,
                         'redist_cost_model_t %sg = g_bad_costs[3];' % v])
    if t == 'const redist_plan_options_t *':
        return Arg('NULL', '&g_opts',
                   [('&g_bad_opts[%d]' % k, k != 2) for k in range(5)])
    if t == 'const redist_layout_t *':
        # a rule out of range, a wrong count of lengths, a negative length
        return Arg('NULL', '&g_layout',
                   [('&g_bad_layouts[%d]' % k, True) for k in range(3)])
    if t == 'const redist_placed_mesh_t *':
        # no mesh, a bad name, a device listed twice
        return Arg('NULL', '&g_placed',
                   [('&g_bad_placed[%d]' % k, True) for k in range(3)])
    if t == 'const redist_exec_options_t *':
        return Arg('NULL', '&g_xopts', [('&g_bad_xopts', True)])
    # ---- arrays
    if t == 'const char *const[]':
        return Arg('NULL', 'g_names',
                   [('g_bad_names[%d]' % k, True) for k in range(4)])
    if t == 'const int64_t[]':
        valid = {'sizes': 'g_sizes', 'shape': 'g_shape', 'coords': 'g_coords',
                 'hosts': 'g_hosts'}.get(n)
        if valid is None:
            raise GenError('%s: no rule for %s %s' % (f, t, n))
        return Arg('NULL', valid,
                   [('g_bad_i64[%d]' % k, n != 'hosts' or k != 1)
                    for k in range(3)])
    if t == 'int64_t[]':
        return Arg('NULL', v, decl=['int64_t %s[REDIST_MAX_AXES];' % v])
    if t == 'const int[]':
        return Arg('NULL', 'g_pus', [('g_bad_int[%d]' % k, True)
                                    for k in range(2)])
    if t == 'const void *const[]':
        return Arg('NULL', '(const void *const *)g_src_all',
                   [('(const void *const *)g_null_ptrs', True)])
    if t == 'const redist_spec_t *const[]':
        return Arg('NULL', 'g_specs', [('g_null_specs', True)])
    if t == 'void *const *const[]':
        return Arg('NULL', 'g_%s_sets' % n, [('g_null_sets', True)])
    if t == 'uint64_t' and n == 'bytes' and f == 'redist_mpi_alloc':
        return Arg('0', '64', [('UINT64_MAX', True)], ptr=False)
    if t == 'void **' and n == 'out' and f == 'redist_mpi_alloc':
        return Arg('NULL', '&' + v, null_only=True,
                   decl=['void *%s = NULL;' % v])
    if t == 'void *' and n == 'ptr' and f == 'redist_mpi_free_mem':
        return Arg('NULL', 'NULL', null_only=True)
    if t == 'uint64_t' and n == 'bytes':
        return Arg('0', '65536', [('UINT64_MAX', False)], ptr=False)
    if t == 'uint64_t' and n == 'budget_bytes':
        return Arg('0', 'REDIST_NO_BUDGET', [('0', False)], ptr=False)
    if t == 'void *const[]':
        return Arg('NULL', 'g_%s_all' % n, [('g_null_ptrs', True)])
    if t == 'void *':
        return Arg('NULL', 'g_%sbuf' % n)
    # ---- strings
    if t == 'const char *':
        return string_rule(f, n)
    if t == 'char *':
        if n != 'buf':
            raise GenError('%s: no rule for %s %s' % (f, t, n))
        return Arg('NULL', v, decl=['char %s[64];' % v])
    # ---- scalars
    if t == 'size_t':
        prev = proto.params[idx - 1] if idx else None
        if prev is not None and prev.name == 'buf':
            return Arg('8', '64', [('0', False), ('1', False)], ptr=False)
        if prev is not None and prev.name == 'text':
            if f == 'redist_bytes_parse':  # the texts of string_rule: 3+
                return Arg('8', '3', ptr=False)
            return Arg('8', 'strlen(g_text)', ptr=False)
        if n == 'bytes':
            return Arg('0', '64', ptr=False)
        raise GenError('%s: no rule for size_t %s' % (f, n))
    if t == 'int':
        return int_rule(f, n)
    if t == 'int64_t':
        return int64_rule(f, n)
    if t == 'unsigned':
        bad = f in ('redist_sim_create', 'redist_exec_sim_run',
                    'redist_exec_sim_run_set')
        return Arg('0', '0', [('0xffffffffu', bad), ('1u << 31', bad)],
                   ptr=False)
    if t in ENUMS:
        valid, count = ENUMS[t]
        return Arg('(%s)0' % t, valid,
                   [('(%s)-1' % t, True), ('%s' % count, True),
                    ('(%s)1000' % t, True)], ptr=False)
    if t == 'redist_status_t':
        return Arg('REDIST_OK', 'REDIST_ERR_PLAN',
                   [('(redist_status_t)-100', True),
                    ('(redist_status_t)100', True),
                    ('(redist_status_t)INT_MIN', True)], ptr=False)
    if t == 'MPI_Comm':
        return Arg('MPI_COMM_NULL', 'MPI_COMM_NULL', ptr=False,
                   null_only=True)
    raise GenError('%s: no rule for parameter type "%s" (%s)' % (f, t, n))


def string_rule(f, n):
    odd = [('""', False), ('g_long', False), ('"?"', False)]
    valid = {
        ('redist_dtype_from_name', 'name'): '"f32"',
        ('redist_reduce_from_name', 'name'): '"sum"',
        ('redist_op_from_name', 'name'): '"slice"',
        ('redist_link_from_name', 'name'): '"node"',
        ('redist_split_from_name', 'name'): '"ceil"',
        ('redist_mesh_find_axis', 'name'): '"x"',
        ('redist_spec_create', 'name'): '"n"',
        ('redist_spec_create_meshes', 'name'): '"n"',
        ('redist_spec_from_strings', 'name'): '"n"',
        ('redist_spec_from_strings_meshes', 'name'): '"n"',
        ('redist_arrays_create', 'name'): '"n"',
        ('redist_arrays_find', 'name'): '"fixture"',
    }
    if (f, n) in valid:
        bad = f.endswith('_from_name') or f == 'redist_mesh_find_axis'
        return Arg('NULL', valid[(f, n)], [(e, bad) for e, _ in odd])
    if f in ('redist_error_set', 'redist_cost_model_set_mesh_link') and \
            n == 'path':  # a JSON path or an option's name, any text
        return Arg('NULL', '"to.dims[1]"', odd)
    if f == 'redist_cost_model_set_mesh_link' and n == 'level':
        return Arg('NULL', '"network"',
                   [('""', True), ('"?"', True), ('g_long', True)])
    if n == 'path':
        return Arg('NULL', '"/nonexistent/redist-bad-input"',
                   [('""', True), ('"/"', True)])
    if n == 'text':
        if f == 'redist_bytes_parse':  # 3 characters read (the len rule)
            return Arg('NULL', '"64K"',
                       [('"-12"', True), ('"1 K"', True), ('"K12"', True),
                        ('g_long', True)])
        if f == 'redist_cost_model_set_axis_links':
            return Arg('NULL', '"x=node"',
                       [('"x="', True), ('"=node"', True),
                        ('"nosuch=node"', True), ('g_long', True)])
        return Arg('NULL', 'g_text')
    if n in ('from_split', 'to_split'):
        return Arg('NULL', '"chunk"', [('""', False), ('g_long', True),
                                      ('"?"', True)])
    if n in ('from_blocks', 'to_blocks'):
        valid = '"4,4|"' if n == 'from_blocks' else '"|4,4"'
        return Arg('NULL', valid, [('""', False), ('g_long', True),
                                   ('"?"', True), ('"3,4|"', True),
                                   ('"-1,9|"', True)])
    if n in ('source', 'what'):
        return Arg('NULL', '"src"', odd)
    if n == 'desc':
        return Arg('NULL', '"pack:2 core:2"',
                   [('""', True), ('"nonsense:2"', True), ('g_long', True)])
    inline = {'mesh': '"x=2,y=4"', 'shape': '"8x8"', 'dtype': '"f32"',
              'from': '"x|y"', 'from_partial': '""', 'to': '"y|x"',
              'to_partial': '""', 'reduce': '"sum"'}
    if f == 'redist_spec_from_strings' and n in inline:
        return Arg('NULL', inline[n], odd)
    placed = dict(inline, from_mesh='"a:x=2,y=4@0-7"',
                  to_mesh='"b:x=2,y=4@8-15"')
    if f == 'redist_spec_from_strings_meshes' and n in placed:
        return Arg('NULL', placed[n], odd)
    raise GenError('%s: no rule for const char * %s' % (f, n))


def int_rule(f, n):
    if n in ('naxes', 'ndims'):
        return Arg('0', '2', [('-1', True), ('17', True), ('200', True),
                              (INT_MIN_S, True), (INT_MAX_S, True)],
                   ptr=False)
    if n in ('axis', 'dim'):
        return Arg('0', '0', [('-1', True), ('16', True), ('200', True),
                              (INT_MIN_S, True), (INT_MAX_S, True)],
                   ptr=False)
    if n in ('i', 'k'):
        return Arg('0', '0', [('-1', True), ('1000', True), (INT_MIN_S, True)],
                   ptr=False)
    if n == 'nsteps':
        # larger than the array is the caller's bug, not bad input
        return Arg('0', 'g_nsteps', [('-1', True), (INT_MIN_S, True)],
                   ptr=False)
    if n == 'n' and f == 'redist_reduce_local':  # inputs: 8 buffers
        return Arg('0', '2', [('-1', True), (INT_MIN_S, True)], ptr=False)
    if n == 'n' and f == 'redist_arrays_create':  # g_specs: one spec
        return Arg('0', '1', [('-1', True), ('0', True), ('65537', True),
                              (INT_MIN_S, True)], ptr=False)
    if n == 'r':
        return Arg('0', '0', [('-1', True), ('1000', True), (INT_MIN_S, True)],
                   ptr=False)
    if n == 'side':
        return Arg('0', '1', [('-1', True), ('2', True), (INT_MIN_S, True)],
                   ptr=False)
    if n in ('grid', 'symmetric', 'plans'):
        return Arg('0', '1', [('-1', False), ('200', False)], ptr=False)
    raise GenError('%s: no rule for int %s' % (f, n))


def int64_rule(f, n):
    if n in ('rank', 'r1', 'r2'):
        # placements may have no bound on their ranks (INT64_MAX)
        big = not f.startswith('redist_placement_')
        return Arg('0', '0', [('-1', True), ('(int64_t)1 << 40', big),
                              ('INT64_MIN', True), ('INT64_MAX', True)],
                   ptr=False)
    if n == 'ndevices':
        return Arg('0', '1', [('0', True), ('-1', True), ('4097', True),
                              ('INT64_MAX', True)], ptr=False)
    if n == 'nranks':
        return Arg('0', '2', [('-1', True), ('INT64_MIN', True)], ptr=False)
    if n == 'count':  # elements of g_srcbuf / g_dstbuf
        return Arg('0', '1', [('-1', True), ('INT64_MIN', True),
                              ('INT64_MAX', True)], ptr=False)
    if n == 'n':
        return Arg('0', '4', [('-1', True), ('INT64_MIN', True)], ptr=False)
    if n == 'host':
        return Arg('0', '0', [('-1', False), ('INT64_MAX', False)], ptr=False)
    raise GenError('%s: no rule for int64_t %s' % (f, n))


# ------------------------------------------------------------------ output

def c_str(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


def compare(proto, value, label):
    """C statements checking ret_ against a documented value."""
    r = proto.ret
    if r in ('const char *', 'char *'):
        if value == 'NULL':
            cond = 'ret_ == NULL'
        else:
            cond = 'ret_ != NULL && strcmp(ret_, %s) == 0' % value
    elif value == 'zeros':
        if r not in STRUCTS:
            raise GenError('%s: "zeros" for %s, a struct this script did not '
                           'find' % (proto.name, r))
        cond = ' && '.join('is_zero(&ret_.%s, sizeof ret_.%s)' % (f, f)
                           for f in STRUCTS[r])
    elif r.endswith('*'):
        if value != 'NULL':
            raise GenError('%s: a pointer result documented as %s'
                           % (proto.name, value))
        cond = 'ret_ == NULL'
    else:
        cond = 'ret_ == (%s)(%s)' % (r, value)
    return ['if (!(%s))' % cond,
            '    fail(%s);' % c_str('%s: %s, documented %s'
                                   % (proto.name, label, value))]


def gen_call(proto, args, label, must_fail=False, want=None):
    lines = ['{', '    redist_error_t e_;', '    redist_error_clear(&e_);',
             '    g_case = %s;' % c_str('%s: %s' % (proto.name, label))]
    for a in args:
        for d in a[0].decl:
            lines.append('    ' + d)
            m = re.match(r'^[\w ]+?[\s*]+(\w+)\s*(\[[^\]]*\])?\s*(=[^;]*)?;$', d)
            if m and not d.startswith('memset'):
                lines.append('    (void)%s;' % m.group(1))
    lines.append('    g_calls++;')
    call = '%s(%s)' % (proto.name, ', '.join(a[1] for a in args))
    status = proto.ret == 'redist_status_t'
    has_err = any(a[1] == '&e_' for a in args)
    if proto.ret == 'void':
        lines.append('    %s;' % call)
        lines.append('    redist_status_t st_ = REDIST_OK;')
        lines.append('    (void)st_;')
    else:
        lines.append('    %s ret_ = %s;' % (proto.ret, call))
        if status:
            lines.append('    redist_status_t st_ = ret_;')
            lines.append('    check_status(st_, %s, %d);'
                         % ('&e_' if has_err else 'NULL', int(must_fail)))
        else:
            lines.append('    redist_status_t st_ = REDIST_OK;')
            lines.append('    (void)st_;')
        if want is not None:
            lines += ['    ' + x for x in compare(proto, want, label)]
        if proto.ret == 'char *' and not any(p.name == 'buf'
                                                for p in proto.params):
            lines.append('    free(ret_);')  # allocated (plan JSON)
        lines.append('    (void)ret_;')
    for a in args:
        for pst in a[0].post:
            lines.append('    ' + pst)
    lines.append('}')
    return lines


def gen_proto(proto, null_only):
    rules = [rule(proto, p, i) for i, p in enumerate(proto.params)]
    status = proto.ret == 'redist_status_t'
    has_ptr = any(r.ptr for r in rules)
    if not status and proto.ret != 'void':
        if has_ptr and proto.null_value is None:
            raise GenError('%s (%s): returns %s but its comment documents '
                           'no "NULL: VALUE"' % (proto.name, proto.header,
                                                 proto.ret))
        if not has_ptr and proto.range_value is None:
            raise GenError('%s (%s): returns %s but its comment documents '
                           'no "Out of range: VALUE"'
                           % (proto.name, proto.header, proto.ret))
    out = ['/* %s */' % proto.name]
    nulls = [(r, r.null) for r in rules]
    want = proto.null_value or ('REDIST_ERR_INVALID' if status else None)
    if rules and not any(r.ptr for r in rules):
        # no pointer: the all-NULL call is the plain call
        want = None
    out += gen_call(proto, nulls, 'all pointers NULL', want=want)
    if null_only or any(r.null_only for r in rules):
        return out
    valid = [(r, r.valid) for r in rules]
    for i, r in enumerate(rules):
        if r.ptr:
            args = list(valid)
            args[i] = (r, 'NULL')
            out += gen_call(proto, args,
                            '%s NULL' % proto.params[i].name)
    for i, r in enumerate(rules):
        for expr, bad in r.garbage:
            args = list(valid)
            args[i] = (r, expr)
            want = proto.range_value if bad and not status else None
            out += gen_call(proto, args, '%s = %s' % (proto.params[i].name,
                                                     expr),
                            must_fail=bad and status, want=want)
    return out


PRELUDE = r'''/* Generated by tests/badinput/gen_bad_input.py from the headers: do
 * not edit.  Every public function called with NULL and with garbage. */
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

%(includes)s

#define UNUSED __attribute__((unused))

static const char *g_case = "setup";
static long g_calls, g_failures;
static char g_sentinel;

static void fail(const char *what)
{
    g_failures++;
    fprintf(stderr, "FAIL %%s: %%s\n", g_case, what);
}

/* Without the sanitizers (which report crashes themselves), name the
 * call that crashed. */
UNUSED static void on_crash(int sig)
{
    static const char head[] = "CRASH in ";
    (void)sig;
    if (write(2, head, sizeof head - 1) < 0 ||
        write(2, g_case, strlen(g_case)) < 0 || write(2, "\n", 1) < 0)
        _exit(3);
    _exit(3);
}

static void catch_crashes(void)
{
#if !defined(__SANITIZE_ADDRESS__)
    signal(SIGSEGV, on_crash);
    signal(SIGBUS, on_crash);
    signal(SIGFPE, on_crash);
    signal(SIGILL, on_crash);
    signal(SIGABRT, on_crash);
#endif
}

UNUSED static int is_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

UNUSED static void check_status(redist_status_t st, const redist_error_t *e,
                         int must_fail)
{
    char msg[160];
    if (st > REDIST_OK || st < REDIST_ERR_MISMATCH) {
        snprintf(msg, sizeof msg, "unknown status %%d", (int)st);
        fail(msg);
    }
    if (must_fail && st == REDIST_OK)
        fail("accepted a bad argument");
    if (!e)
        return;
    if (st == REDIST_OK && e->status != REDIST_OK)
        fail("succeeded with the error struct set");
    if (st != REDIST_OK && e->status != st) {
        snprintf(msg, sizeof msg, "returned %%d, error struct says %%d",
                 (int)st, (int)e->status);
        fail(msg);
    }
    if (st != REDIST_OK && !e->text[0])
        fail("failed without a message");
}

UNUSED static void out_handle(redist_status_t st, void *h)
{
    if (st == REDIST_OK && h == (void *)&g_sentinel)
        fail("succeeded without writing *out");
    if (st != REDIST_OK && h != (void *)&g_sentinel)
        fail("wrote *out although it failed");
}
'''

CORE_FIXTURES = r'''
UNUSED static redist_mesh_t *g_mesh;
UNUSED static redist_spec_t *g_spec;
UNUSED static redist_plan_t *g_plan;
UNUSED static redist_arrays_t *g_arrays;
UNUSED static redist_plan_set_t *g_set;
UNUSED static const redist_spec_t *g_specs[1], *g_null_specs[1];
UNUSED static void *const *g_src_sets[1], *const *g_dst_sets[1],
    *const *g_null_sets[1];
UNUSED static redist_sim_t *g_sim;
UNUSED static redist_backend_t *g_be;
UNUSED static FILE *g_devnull;
UNUSED static redist_error_t g_err, g_bad_err;
UNUSED static redist_type_t g_from, g_bad_types[6];
UNUSED static redist_step_view_t g_steps[16], g_bad_steps[5][16];
UNUSED static int g_nsteps;
UNUSED static redist_cost_model_t g_cost, g_bad_costs[4];
UNUSED static redist_plan_options_t g_opts, g_bad_opts[5];
UNUSED static redist_exec_options_t g_xopts, g_bad_xopts;
UNUSED static const int64_t g_len44[2] = {4, 4}, g_len_neg[2] = {-1, 9};
UNUSED static redist_layout_t g_layout, g_bad_layouts[3];
UNUSED static redist_placed_mesh_t g_placed, g_bad_placed[3];
UNUSED static const int64_t g_dup_devs[8] = {0, 1, 2, 3, 4, 5, 6, 6};
UNUSED static const char *g_names[REDIST_MAX_AXES] = {"x", "y"};
UNUSED static const char *g_bad_names[4][REDIST_MAX_AXES];
UNUSED static const int64_t g_sizes[REDIST_MAX_AXES] = {2, 4};
UNUSED static const int64_t g_shape[REDIST_MAX_DIMS] = {8, 8};
UNUSED static const int64_t g_coords[REDIST_MAX_AXES] = {1, 3};
UNUSED static const int64_t g_hosts[REDIST_MAX_AXES] = {0, 0};
UNUSED static const int g_pus[REDIST_MAX_AXES] = {0, 1};
UNUSED static int64_t g_bad_i64[3][REDIST_MAX_AXES];
UNUSED static int g_bad_int[2][REDIST_MAX_AXES];
UNUSED static void *g_srcbuf, *g_dstbuf, *g_src_all[8], *g_dst_all[8];
UNUSED static void *const g_null_ptrs[8];
UNUSED static const char *g_text = "{\"mesh\": 1}";
UNUSED static char g_long[2048];

/* The fixture plan: the bytes objective's steps (slice to permute) name
 * dims and axes that the bad steps below can break. */
static const redist_plan_options_t g_bytes_opts = {
    .objective = REDIST_OBJECTIVE_BYTES};

static int setup_core(void)
{
    redist_error_t err;
    redist_error_clear(&err);
    memset(g_long, 'x', sizeof g_long - 1);
    if (redist_mesh_create(2, g_names, g_sizes, &g_mesh, &err) ||
        redist_spec_from_strings("x=2,y=4", "8x8", "f32", "x|y", NULL,
                                 "y|x", NULL, NULL, "fixture", 0, &g_spec,
                                 &err) ||
        redist_plan_create(g_spec, &g_bytes_opts, &g_plan, &err) ||
        redist_sim_create(1, 0, &g_sim, &err))
        return -1;
    g_specs[0] = g_spec;
    if (redist_arrays_create("set", 1, g_specs, REDIST_NO_BUDGET, &g_arrays,
                             &err) ||
        redist_plan_set_create(g_arrays, &g_bytes_opts, NULL, NULL, &g_set, &err))
        return -1;
    g_src_sets[0] = g_src_all;
    g_dst_sets[0] = g_dst_all;
    g_be = redist_sim_backend(g_sim, 0);
    g_devnull = fopen("/dev/null", "w");
    g_err.status = REDIST_ERR_PLAN;
    snprintf(g_err.source, sizeof g_err.source, "spec.json");
    snprintf(g_err.text, sizeof g_err.text, "a message");
    memset(&g_bad_err, 0xA5, sizeof g_bad_err);
    g_from = *redist_spec_from(g_spec);
    /* types: bytes 0xA5; ndims 17; axis 200; 17 axes in a dim; a partial
     * bit beyond the mesh; an axis used twice */
    memset(&g_bad_types[0], 0xA5, sizeof g_bad_types[0]);
    for (int k = 1; k < 6; k++)
        g_bad_types[k] = g_from;
    g_bad_types[1].ndims = 17;
    g_bad_types[2].dims[0][0] = 200;
    g_bad_types[3].dim_naxes[0] = 17;
    g_bad_types[4].partial = 1u << 20;
    g_bad_types[5].dims[1][0] = g_bad_types[5].dims[0][0];
    g_layout.split = REDIST_SPLIT_CHUNK;
    g_layout.blocks[0] = g_len44; /* dim 0 of x|y: 2 blocks */
    g_layout.nblocks[0] = 2;
    g_bad_layouts[0].split = (redist_split_t)1000;
    g_bad_layouts[1].blocks[0] = g_len44;
    g_bad_layouts[1].nblocks[0] = 1;
    g_bad_layouts[2].blocks[0] = g_len_neg;
    g_bad_layouts[2].nblocks[0] = 2;
    g_placed = (redist_placed_mesh_t){"a", g_mesh, NULL};
    g_bad_placed[0] = (redist_placed_mesh_t){"a", NULL, NULL};
    g_bad_placed[1] = (redist_placed_mesh_t){"a,b", g_mesh, NULL};
    g_bad_placed[2] = (redist_placed_mesh_t){"a", g_mesh, g_dup_devs};
    g_nsteps = redist_plan_num_steps(g_plan);
    if (g_nsteps < 1 || g_nsteps > 16)
        return -1;
    for (int i = 0; i < g_nsteps; i++)
        redist_plan_step(g_plan, i, &g_steps[i]);
    for (int k = 0; k < 5; k++)
        memcpy(g_bad_steps[k], g_steps, sizeof g_steps);
    memset(&g_bad_steps[0][0], 0xA5, sizeof g_bad_steps[0][0]);
    g_bad_steps[1][0].op = (redist_op_t)77;
    g_bad_steps[2][0].op = REDIST_OP_PERMUTE;
    g_bad_steps[2][0].after.ndims = 40;
    g_bad_steps[3][0].axis = 200;
    g_bad_steps[4][g_nsteps - 1].dim = g_bad_steps[4][g_nsteps - 1].from_dim =
        g_bad_steps[4][g_nsteps - 1].to_dim = -5;
    redist_cost_model_default(&g_cost);
    for (int k = 0; k < 4; k++)
        g_bad_costs[k] = g_cost;
    g_bad_costs[0].axis_link[0] = 200;
    g_bad_costs[1].alpha[0] = NAN;
    g_bad_costs[2].beta[REDIST_LINK_COUNT - 1] = -1;
    memset(&g_bad_costs[3], 0xA5, sizeof g_bad_costs[3]);
    for (int k = 0; k < 5; k++)
        memset(&g_bad_opts[k], 0, sizeof g_bad_opts[k]);
    g_bad_opts[0].objective = (redist_objective_t)77;
    g_bad_opts[1].cost = &g_bad_costs[0];
    g_bad_opts[2].max_states = 1; /* a budget of one: still a plan */
    g_bad_opts[3].max_peak_bytes = 1;
    g_bad_opts[4].no_cross_sums = -3; /* 0 or 1 */
    g_bad_xopts.flags = 0xffffffffu;
    for (int a = 0; a < REDIST_MAX_AXES; a++) {
        g_bad_names[0][a] = NULL;
        g_bad_names[1][a] = "";
        g_bad_names[2][a] = "x";
        g_bad_names[3][a] = g_long;
        g_bad_i64[0][a] = -1;
        g_bad_i64[1][a] = INT64_MAX;
        g_bad_i64[2][a] = INT64_MIN;
        g_bad_int[0][a] = -1;
        g_bad_int[1][a] = INT_MAX;
    }
    uint64_t sb = redist_spec_src_bytes(g_spec), db = redist_spec_dst_bytes(g_spec);
    g_srcbuf = calloc(1, sb);
    g_dstbuf = calloc(1, db);
    for (int r = 0; r < 8; r++) {
        g_src_all[r] = calloc(1, sb);
        g_dst_all[r] = calloc(1, db);
        if (!g_src_all[r] || !g_dst_all[r])
            return -1;
    }
    return g_devnull && g_srcbuf && g_dstbuf ? 0 : -1;
}

static void teardown_core(void)
{
    for (int r = 0; r < 8; r++) {
        free(g_src_all[r]);
        free(g_dst_all[r]);
    }
    free(g_srcbuf);
    free(g_dstbuf);
    if (g_devnull)
        fclose(g_devnull);
    redist_sim_free(g_sim);
    redist_plan_set_free(g_set);
    redist_arrays_free(g_arrays);
    redist_plan_free(g_plan);
    redist_spec_free(g_spec);
    redist_mesh_free(g_mesh);
}
'''

TOPO_FIXTURES = r'''
UNUSED static redist_topo_t *g_topo;
UNUSED static redist_placement_t *g_pl;

static int setup_topo(void)
{
    return redist_topo_load_synthetic("pack:2 core:2", &g_topo, NULL) ||
           redist_placement_default(g_topo, &g_pl, NULL);
}

static void teardown_topo(void)
{
    redist_placement_free(g_pl);
    redist_topo_free(g_topo);
}
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--out', required=True)
    ap.add_argument('--group', required=True)
    ap.add_argument('--null-only', action='store_true')
    ap.add_argument('--known', nargs='*', default=[])
    ap.add_argument('headers', nargs='+')
    a = ap.parse_args()
    try:
        if a.known:
            d = os.path.dirname(a.headers[0])
            present = sorted(x for x in os.listdir(d) if x.endswith('.h'))
            missing = [x for x in present if x not in a.known]
            if missing:
                raise GenError('header(s) %s in no group of the bad-input '
                               'test (tests/badinput/meson.build)'
                               % ', '.join(missing))
        protos = []
        for h in a.headers:
            protos += parse_header(h)
        if not protos:
            raise GenError('no function found')
        body = []
        for p in protos:
            body += ['    ' + x for x in gen_proto(p, a.null_only)]
    except GenError as e:
        sys.stderr.write('gen_bad_input.py: %s\n' % e)
        return 1
    includes = '#include "redist.h"\n' + '\n'.join(
        '#include "redist/%s"' % os.path.basename(h) for h in a.headers)
    text = PRELUDE % {'includes': includes}
    setup, teardown = [], []
    if not a.null_only:
        text += CORE_FIXTURES
        setup.append('setup_core()')
        teardown.append('teardown_core();')
        if any(os.path.basename(h) == 'topo.h' for h in a.headers):
            text += TOPO_FIXTURES
            setup.append('setup_topo()')
            teardown.insert(0, 'teardown_topo();')
    text += '\nint main(void)\n{\n    catch_crashes();\n'
    if setup:
        text += ('    if (%s) {\n        fprintf(stderr, "fixtures could '
                 'not be built\\n");\n        return 2;\n    }\n'
                 % ' || '.join(setup))
    text += '\n'.join(body) + '\n'
    for t in teardown:
        text += '    %s\n' % t
    text += ('    printf("bad input (%s): %%d functions, %%ld calls, '
             '%%ld failures\\n", %d, g_calls, g_failures);\n'
             '    return g_failures ? 1 : 0;\n}\n' % (a.group, len(protos)))
    tmp = a.out + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, a.out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
