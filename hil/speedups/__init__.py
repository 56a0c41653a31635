"""What hil changes in torch and ExecuTorch at run time to export and load faster, apart from
the recipes (what a backend does to a model): each part a module of its own, `switch` the
declared list, the digests they check and HIL_PRISTINE_EXPORT. A reader auditing the changes
reads this package; one learning what a `.pte` is made of reads hil/recipes/."""
