class MatmulTemplate:
    name = "matmul"
    principle_ids: list[str] = []

    def applies(self, kernel):
        return "under construction"
