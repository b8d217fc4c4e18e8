"""A source folder's facts (``build.source``, ``python_package.source``), below validation and
the push code alike: both read the same answers, and validation imports no push code.

- ``folder``: which files count (ignore files as git reads them, the fixed exclusions,
  links only to files that count themselves), the bounds, the content hash, the name;
- ``credentials``: what a folder must not carry (credential files by name, private keys
  and Google credential files by content, whiteout names);
- ``requirements``: a ``build.requirements`` file's ``-r``/``-c`` includes kept in the
  project, the bytes an image's tag covers, its local path requirements.

Pure file reading: nothing here builds, uploads or pushes. Nothing is imported here, so
each reader loads only the module it needs.
"""
