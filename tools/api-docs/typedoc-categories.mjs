// A TypeDoc plugin (typedoc.json "plugin"): sorts the ~100 exports of the main entry point into
// categories by the folder of lib/ they are declared in, so its page reads Module, Options, Locks,
// Delayed jobs, … instead of one alphabetical list per kind; no @category tag is written in lib/.
// An export with its own @category keeps it.
import { relative, sep } from 'node:path';
import { Comment, CommentTag, Converter, ReflectionKind } from 'typedoc';

const MAIN_MODULE = 'nestjs-redis-lock';

/** First match wins; paths are relative to lib/, with '/' separators. */
const RULES = [
  [/\.error\.ts$|^core\/errors\//, 'Errors'],
  [/^redis-lock\.module/, 'Module'],
  [/^core\/(options|redis)\//, 'Options'],
  [/^core\/events\//, 'Events'],
  [/^core\/(transaction|outbox)\/|^delay-queue\/outbox\//, 'Transactions and outbox'],
  [/^decorators\/on-delayed/, 'Delayed jobs'],
  [/^(decorators|lock)\//, 'Locks'],
  [/^delay-queue\//, 'Delayed jobs'],
  [/^scheduling\//, 'Scheduling'],
];

/** @param {import('typedoc').Application} app */
export function load(app) {
  const lib = `${process.cwd()}${sep}lib`;
  app.converter.on(
    Converter.EVENT_RESOLVE_END,
    (context) => {
      const project = context.project;
      const main = project.getChildByName(MAIN_MODULE);
      if (!main || !main.kindOf(ReflectionKind.Module)) throw new Error(`typedoc-categories: no module ${MAIN_MODULE}`);
      for (const child of main.children ?? []) {
        if (child.comment?.blockTags.some((tag) => tag.tag === '@category')) continue;
        const fileName = project.getSymbolIdFromReflection(child)?.fileName;
        if (!fileName) continue;
        const path = relative(lib, fileName).split(sep).join('/');
        const category = RULES.find(([pattern]) => pattern.test(path))?.[1];
        if (!category) continue;
        child.comment ??= new Comment();
        child.comment.blockTags.push(new CommentTag('@category', [{ kind: 'text', text: category }]));
      }
    },
    // before TypeDoc's CategoryPlugin (-200) reads the tags
    100,
  );
}
