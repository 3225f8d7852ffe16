/* publish_internal.h — what publish.c shares with publish_recover.c: the
 * hooked filesystem wrappers (so the test hook reaches recovery too) and the
 * parser of side-entry names ".<name>.<24 hex>.<tmp|bak|new|jnl>". */
#ifndef CT_OUTPUT_PUBLISH_INTERNAL_H
#define CT_OUTPUT_PUBLISH_INTERNAL_H

int ct_pub_rename(int dfd, const char *from, const char *to);
int ct_pub_unlink(int dfd, const char *name);
int ct_pub_dirsync(int dfd, const char *dir);

/* The journal of a commit whose last member is name:
 * ".<name>.000000000000000000000000.jnl" (fixed, one per set); 0 if it
 * does not fit NAME_MAX. */
int ct_pub_journal_name(char *out, const char *name);

/* If entry is ".<name>.<24 lower-case hex>.<ext>" with ext tmp, bak, new or
 * jnl: the name part in name_out (NAME_MAX + 1 bytes) and ext returned;
 * else NULL. */
const char *ct_pub_parse_side(const char *entry, char *name_out);

#endif
