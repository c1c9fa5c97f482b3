{{/*
skylb.fullname: the name of every object, and of the leader-election Lease.
*/}}
{{- define "skylb.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/*
skylb.labels: the labels of every object, those manifests/kustomization.yaml
gives.
*/}}
{{- define "skylb.labels" -}}
app.kubernetes.io/part-of: skylb
{{- end -}}

{{/*
skylb.selectorLabels: the labels of skylb's pods, which the Deployment, the
PodDisruptionBudget and the metrics Service select.
*/}}
{{- define "skylb.selectorLabels" -}}
app.kubernetes.io/name: skylb
{{- end -}}

{{/*
skylb.join: a setting's value as a string, a list joined with commas.
*/}}
{{- define "skylb.join" -}}
{{- if kindIs "slice" . -}}
{{- join "," . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/*
skylb.configData: the ConfigMap's data, as YAML: SKYLB_ZONE, SKYLB_OWNER_ID,
SKYLB_NAMESPACE with namespaces, SKYLB_VIEW with views, and one SKYLB_<FLAG>
per entry of .Values.settings.
*/}}
{{- define "skylb.configData" -}}
{{- $data := dict -}}
{{- range $flag, $value := .Values.settings -}}
{{- $name := printf "SKYLB_%s" ($flag | upper | replace "-" "_") -}}
{{- if or (eq $name "SKYLB_ZONE") (eq $name "SKYLB_OWNER_ID") -}}
{{- fail (printf "settings.%s: set it with the value zone or ownerId" $flag) -}}
{{- end -}}
{{- if eq $name "SKYLB_NAMESPACE" -}}
{{- fail (printf "settings.%s: set it with the value namespaces, which grants skylb those namespaces" $flag) -}}
{{- end -}}
{{- if and (eq $name "SKYLB_COREDNS_ADDRESS") $.Values.corednsAddress -}}
{{- fail (printf "settings.%s: set it with the value corednsAddress" $flag) -}}
{{- end -}}
{{- if and (eq $name "SKYLB_COREDNS_VIEWS") $.Values.corednsViews -}}
{{- fail (printf "settings.%s: set it with the value corednsViews" $flag) -}}
{{- end -}}
{{- if and (eq $name "SKYLB_VIEW") $.Values.views -}}
{{- fail (printf "settings.%s: set the views with the value views alone" $flag) -}}
{{- end -}}
{{- $_ := set $data $name (include "skylb.join" $value) -}}
{{- end -}}
{{- $_ := set $data "SKYLB_ZONE" (include "skylb.join" (required "zone is required" .Values.zone)) -}}
{{- $_ := set $data "SKYLB_OWNER_ID" (include "skylb.join" (required "ownerId is required" .Values.ownerId)) -}}
{{- if .Values.namespaces -}}
{{- $_ := set $data "SKYLB_NAMESPACE" (include "skylb.join" .Values.namespaces) -}}
{{- end -}}
{{- if .Values.corednsAddress -}}
{{- $_ := set $data "SKYLB_COREDNS_ADDRESS" .Values.corednsAddress -}}
{{- end -}}
{{- if .Values.corednsViews -}}
{{- $_ := set $data "SKYLB_COREDNS_VIEWS" .Values.corednsViews -}}
{{- end -}}
{{- if .Values.views -}}
{{- $views := list -}}
{{- range $name, $source := .Values.views -}}
{{- $views = append $views (printf "%s=%s" $name $source) -}}
{{- end -}}
{{- $_ := set $data "SKYLB_VIEW" (include "skylb.join" $views) -}}
{{- end -}}
{{- toYaml $data -}}
{{- end -}}

{{/*
skylb.configName: the ConfigMap's name, "<fullname>-config-<hash>" with the
hash kustomize's configMapGenerator appends (of the data, sha256, the first 10
hex digits with 0, 1, 3, a and e as g, h, k, m and t): a change of the
settings rolls the Deployment, and the default name is that of manifests/.
*/}}
{{- define "skylb.configName" -}}
{{- $data := include "skylb.configData" . | fromYaml -}}
{{- $hash := dict "data" $data "kind" "ConfigMap" "name" "" | toJson | sha256sum | trunc 10 -}}
{{- $hash = $hash | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t" -}}
{{- printf "%s-config-%s" (include "skylb.fullname" .) $hash -}}
{{- end -}}
