/* plugin.c: loads a workload plugin (a shared module exporting PRSTM_PLUGIN) and checks it before the engine trusts it. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "loaders_internal.h"

struct prstm_plugin {
  void *handle;
};

/* Checks what a plugin's descriptor claims, so that a broken plugin is an
 * error message here rather than a crash inside a kernel launch. */
static int plugin_check_workload(const char *path, const prstm_workload *wl, char *err, size_t errlen) {
  if (wl == NULL || wl->name == NULL || wl->name[0] == '\0') {
    loaders_errf(err, errlen, "%s: the plugin's workload has no name", path);
    return PRSTM_EPLUGIN;
  }
  if (wl->ntypes == 0 || wl->ntypes > PRSTM_MAX_TYPES || wl->types == NULL) {
    loaders_errf(err, errlen, "%s: workload %s declares %u transaction types (1 to %d expected)", path, wl->name,
                 wl->ntypes, PRSTM_MAX_TYPES);
    return PRSTM_EPLUGIN;
  }
  for (unsigned t = 0; t < wl->ntypes; t++) {
    const prstm_type_desc *d = &wl->types[t];
    if (d->name == NULL || d->tag > PRSTM_MAX_TAG || d->nargs > PRSTM_MAX_ARGS) {
      loaders_errf(err, errlen, "%s: workload %s: type %u has no name, a tag above %d or more than %d arguments", path,
                   wl->name, t, PRSTM_MAX_TAG, PRSTM_MAX_ARGS);
      return PRSTM_EPLUGIN;
    }
  }
  if (wl->nvariants == 0 || wl->nvariants > 4 || wl->nparams > PRSTM_MAX_PARAMS ||
      (wl->nparams > 0 && wl->params == NULL) || wl->check_invariant == NULL) {
    loaders_errf(err, errlen,
                 "%s: workload %s: needs 1 to 4 worker variants, at most %d params and a check_invariant hook", path,
                 wl->name, PRSTM_MAX_PARAMS);
    return PRSTM_EPLUGIN;
  }
  if (wl->uses_add < PRSTM_ADDS_NONE || wl->uses_add > PRSTM_ADDS_UNREAD_ONLY) {
    loaders_errf(err, errlen, "%s: workload %s: uses_add is %d (PRSTM_ADDS_NONE, _COUNTED or _UNREAD_ONLY expected)",
                 path, wl->name, wl->uses_add);
    return PRSTM_EPLUGIN;
  }
  for (unsigned v = 0; v < wl->nvariants; v++) {
    if (wl->variants[v].cpu_worker == NULL) {
      loaders_errf(err, errlen, "%s: workload %s: worker variant %u has no CPU worker", path, wl->name, v);
      return PRSTM_EPLUGIN;
    }
  }
  return 0;
}

int prstm_plugin_open(const char *path, prstm_plugin **out, const prstm_workload **wl, char *err, size_t errlen) {
  if (err != NULL && errlen > 0) err[0] = '\0';
  if (path == NULL || out == NULL || wl == NULL) {
    loaders_errf(err, errlen, "prstm_plugin_open: invalid argument");
    return PRSTM_EINVAL;
  }
  *out = NULL;
  *wl = NULL;
  /* dlopen searches the library path for a bare name; a plugin named in a
   * config is a file, so a name without a slash is taken as ./name. */
  char local[1100];
  const char *open_path = path;
  if (strchr(path, '/') == NULL) {
    loaders_errf(local, sizeof local, "./%s", path);
    open_path = local;
  }
  void *h = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    const char *why = dlerror();
    /* dlerror's text starts with the path it tried. */
    loaders_errf(err, errlen, "cannot load %s", why ? why : path);
    return PRSTM_EPLUGIN;
  }
  const unsigned *abi = (const unsigned *)dlsym(h, "prstm_plugin_abi_version");
  /* POSIX gives no other way to turn a symbol into a function pointer. */
  const prstm_workload *(*entry)(void) = NULL;
  *(void **)&entry = dlsym(h, "prstm_plugin_workload");
  if (abi == NULL || entry == NULL) {
    loaders_errf(err, errlen, "%s: not a prstm workload plugin (no PRSTM_PLUGIN in its sources)", path);
    dlclose(h);
    return PRSTM_EPLUGIN;
  }
  if (*abi != PRSTM_ABI_VERSION) {
    loaders_errf(err, errlen,
                 "%s: built for prstm ABI %u, this engine (prstm %s) has ABI %u: rebuild the plugin against it", path,
                 *abi, PRSTM_VERSION_STRING, (unsigned)PRSTM_ABI_VERSION);
    dlclose(h);
    return PRSTM_EPLUGIN;
  }
  const prstm_workload *w = entry();
  int rc = plugin_check_workload(path, w, err, errlen);
  if (rc) {
    dlclose(h);
    return rc;
  }
  prstm_plugin *p = calloc(1, sizeof *p);
  if (p == NULL) {
    dlclose(h);
    loaders_errf(err, errlen, "%s: out of memory", path);
    return PRSTM_ENOMEM;
  }
  p->handle = h;
  *out = p;
  *wl = w;
  return 0;
}

void prstm_plugin_close(prstm_plugin *plugin) {
  if (plugin == NULL) return;
  dlclose(plugin->handle);
  free(plugin);
}
